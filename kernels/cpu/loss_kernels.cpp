// CPU kernels of the loss and metric ops: softmax_with_cross_entropy, cross_entropy,
// cross_entropy2, top_k, top_k_v2, accuracy and the grad kernels of all but accuracy.
// Tensors of any rank are treated as [rows, last dim], top_k_v2's as lines along its axis.
// Attributes, dtypes and dims are checked by kernels/loss_ops.hpp's fronts, shared with the
// CUDA kernels; these also check label values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/kernel.hpp"
#include "kernels/loss_ops.hpp"

namespace pe {

namespace {

// --- cross-entropy of probabilities (cross_entropy, cross_entropy2, use_softmax = false) --

/// -log p as Paddle's TolerableValue clamps it: a zero probability gives 1e20, not inf.
float neg_log(float p) {
  constexpr float appro_inf = 1e20f;
  const float log_p = std::log(p);
  if (std::isinf(log_p)) return log_p > 0 ? -appro_inf : appro_inf;
  return -log_p;
}

/// Each row's probability of its hard label (0 in rows whose label is ignore_index), after
/// checking the labels lie in [0, classes).
std::vector<float> matched_probabilities(const kernel_context& ctx, const float* x,
                                         row_layout layout, const std::int64_t* label,
                                         std::int64_t ignore) {
  std::vector<float> match(static_cast<std::size_t>(layout.rows), 0.f);
  for (std::int64_t r = 0; r < layout.rows; ++r) {
    const std::int64_t y = label[r];
    if (y == ignore) continue;
    if (y < 0 || y >= layout.cols)
      ctx.fail("Label value " + std::to_string(y) + " in row " + std::to_string(r) +
               " is outside [0, " + std::to_string(layout.cols) + ") and is not ignore_index (" +
               std::to_string(ignore) + ")");
    match[static_cast<std::size_t>(r)] = x[r * layout.cols + y];
  }
  return match;
}

/// Loss[r] = -log X[r, Label[r]] for hard labels (0 in ignored rows), or
/// -sum_j Label[r, j] log X[r, j] for soft ones. Returns MatchX for hard labels.
std::vector<float> probability_cross_entropy(const kernel_context& ctx, const tensor& x,
                                             const tensor& label, bool soft_label,
                                             tensor& loss) {
  const row_layout layout = probability_xent_rows(ctx, x, label, soft_label);
  loss.resize(dtype::fp32, with_last_dim(x.shape(), 1));
  const float* p = x.data<float>();
  float* l = loss.data<float>();
  if (soft_label) {
    const float* y = label.data<float>();
    for (std::int64_t r = 0; r < layout.rows; ++r) {
      double row_loss = 0;
      for (std::int64_t j = 0; j < layout.cols; ++j)
        row_loss += y[r * layout.cols + j] * static_cast<double>(neg_log(p[r * layout.cols + j]));
      l[r] = static_cast<float>(row_loss);
    }
    return {};
  }
  const std::int64_t ignore = ignore_index(ctx);
  const std::int64_t* y = label.data<std::int64_t>();
  std::vector<float> match = matched_probabilities(ctx, p, layout, y, ignore);
  for (std::int64_t r = 0; r < layout.rows; ++r)
    l[r] = y[r] == ignore ? 0.f : neg_log(match[static_cast<std::size_t>(r)]);
  return match;
}

/// X@GRAD of a hard-label cross-entropy: -Loss@GRAD[r] / match[r] at each row's label, 0
/// elsewhere and in ignored rows.
void hard_label_grad(const kernel_context& ctx, row_layout layout, const tensor& label,
                     const float* match, const tensor& loss_grad, tensor& x_grad) {
  const std::int64_t ignore = ignore_index(ctx);
  const std::int64_t* y = label.data<std::int64_t>();
  const float* dl = loss_grad.data<float>();
  float* g = x_grad.data<float>();
  std::fill(g, g + x_grad.numel(), 0.f);
  for (std::int64_t r = 0; r < layout.rows; ++r)
    if (y[r] != ignore) g[r * layout.cols + y[r]] = -dl[r] / match[r];
}

/// X@GRAD of cross-entropy over probabilities X: -Label / X * Loss@GRAD for soft labels,
/// hard_label_grad for hard ones.
void probability_cross_entropy_grad(const kernel_context& ctx, const tensor& x,
                                    const tensor& label, bool soft_label,
                                    const tensor& loss_grad, std::string_view loss_slot,
                                    tensor& x_grad) {
  const row_layout layout = probability_xent_grad_rows(ctx, x, label, soft_label, loss_grad, loss_slot);
  x_grad.resize(dtype::fp32, x.shape());
  const float* p = x.data<float>();
  if (!soft_label) {
    const std::vector<float> match = matched_probabilities(
        ctx, p, layout, label.data<std::int64_t>(), ignore_index(ctx));
    return hard_label_grad(ctx, layout, label, match.data(), loss_grad, x_grad);
  }
  const float* y = label.data<float>();
  const float* dl = loss_grad.data<float>();
  float* g = x_grad.data<float>();
  for (std::int64_t r = 0; r < layout.rows; ++r)
    for (std::int64_t j = 0; j < layout.cols; ++j) {
      const std::int64_t i = r * layout.cols + j;
      g[i] = -y[i] / p[i] * dl[r];
    }
}

void cross_entropy(kernel_context& ctx) {
  const tensor& x = ctx.input("X");
  expect_dtype(ctx, "X", x, dtype::fp32);
  probability_cross_entropy(ctx, x, ctx.input("Label"), ctx.attrs().get<bool>("soft_label"),
                            ctx.output("Y"));
}

void cross_entropy_grad(kernel_context& ctx) {
  const tensor& x = ctx.input("X");
  expect_dtype(ctx, "X", x, dtype::fp32);
  probability_cross_entropy_grad(ctx, x, ctx.input("Label"), ctx.attrs().get<bool>("soft_label"),
                                 ctx.input("Y@GRAD"), "Y@GRAD", ctx.output("X@GRAD"));
}

/// cross_entropy with hard labels, also writing MatchX (each row's probability of its
/// label) and XShape ([X's dims, 0]) for cross_entropy_grad2.
void cross_entropy2(kernel_context& ctx) {
  const tensor& x = ctx.input("X");
  expect_dtype(ctx, "X", x, dtype::fp32);
  const std::vector<float> match =
      probability_cross_entropy(ctx, x, ctx.input("Label"), false, ctx.output("Y"));
  tensor& match_x = ctx.output("MatchX");
  match_x.resize(dtype::fp32, with_last_dim(x.shape(), 1));
  std::copy(match.begin(), match.end(), match_x.data<float>());
  shape_t xshape = x.shape();
  xshape.push_back(0);
  ctx.output("XShape").resize(dtype::fp32, xshape);
}

/// X@GRAD from MatchX, Label and Y@GRAD; X's dims are XShape's without its trailing 0.
void cross_entropy_grad2(kernel_context& ctx) {
  const cross_entropy_grad2_front f = cross_entropy_grad2_front_of(ctx, bound_input);
  tensor& x_grad = ctx.output("X@GRAD");
  x_grad.resize(dtype::fp32, f.x_dims);
  const row_layout layout = rows_of(ctx, "X@GRAD", x_grad);
  const std::int64_t ignore = ignore_index(ctx);
  const std::int64_t* y = f.label.data<std::int64_t>();
  for (std::int64_t r = 0; r < layout.rows; ++r)
    if (y[r] != ignore && (y[r] < 0 || y[r] >= layout.cols))
      ctx.fail("Label value " + std::to_string(y[r]) + " in row " + std::to_string(r) +
               " is outside [0, " + std::to_string(layout.cols) + ")");
  hard_label_grad(ctx, layout, f.label, f.match_x.data<float>(), f.y_grad, x_grad);
}

// --- softmax_with_cross_entropy ------------------------------------------------------

/// Softmax and cross-entropy of each row, numerically stable: with m the row maximum,
/// log softmax_j = (x_j - m) - log(sum_i exp(x_i - m)), so no exp overflows.
/// With use_softmax = false the Logits are probabilities already: Softmax is a copy of
/// them and Loss their cross-entropy, as cross_entropy computes it.
void softmax_with_cross_entropy(kernel_context& ctx) {
  const tensor& logits = ctx.input("Logits");
  const tensor& label = ctx.input("Label");
  const softmax_xent_front f = softmax_xent_front_of(ctx, logits);
  const auto [rows, classes] = f.rows;
  const bool soft_label = f.soft;
  tensor& softmax = ctx.output("Softmax");
  tensor& loss = ctx.output("Loss");
  if (!f.use_softmax) {
    probability_cross_entropy(ctx, logits, label, soft_label, loss);
    softmax.copy_from(logits);
    return;
  }
  check_label(ctx, label, logits, soft_label);
  const std::int64_t ignore = ignore_index(ctx);

  softmax.resize(dtype::fp32, logits.shape());
  loss.resize(dtype::fp32, with_last_dim(logits.shape(), 1));
  const float* x = logits.data<float>();
  float* s = softmax.data<float>();
  float* l = loss.data<float>();
  const float* soft = soft_label ? label.data<float>() : nullptr;
  const std::int64_t* hard = soft_label ? nullptr : label.data<std::int64_t>();

  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * classes;
    float* sr = s + r * classes;
    const float max = *std::max_element(xr, xr + classes);
    double sum = 0;
    for (std::int64_t j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(xr[j] - max));
    const double log_sum = std::log(sum);
    auto log_softmax = [&](std::int64_t j) { return static_cast<double>(xr[j] - max) - log_sum; };
    for (std::int64_t j = 0; j < classes; ++j) sr[j] = static_cast<float>(std::exp(log_softmax(j)));

    if (soft_label) {
      const float* yr = soft + r * classes;
      double row_loss = 0;
      for (std::int64_t j = 0; j < classes; ++j) row_loss -= yr[j] * log_softmax(j);
      l[r] = static_cast<float>(row_loss);
      continue;
    }
    const std::int64_t y = hard[r];
    if (y == ignore) {
      l[r] = 0.f;
      continue;
    }
    if (y < 0 || y >= classes)
      ctx.fail("Label value " + std::to_string(y) + " in row " + std::to_string(r) +
               " is outside [0, " + std::to_string(classes) + ") and is not ignore_index (" +
               std::to_string(ignore) + ")");
    l[r] = static_cast<float>(-log_softmax(y));
  }
}

/// Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD per row (Label itself for soft
/// labels); rows whose label is ignore_index get zero. With use_softmax = false, the
/// gradient of cross-entropy over the probabilities Softmax (cross_entropy_grad's).
void softmax_with_cross_entropy_grad(kernel_context& ctx) {
  const tensor& softmax = ctx.input("Softmax");
  const tensor& label = ctx.input("Label");
  const tensor& loss_grad = ctx.input("Loss@GRAD");
  const softmax_xent_front f = softmax_xent_grad_front_of(ctx, softmax, label, loss_grad);
  if (!f.use_softmax)
    return probability_cross_entropy_grad(ctx, softmax, label, f.soft, loss_grad, "Loss@GRAD",
                                          ctx.output("Logits@GRAD"));
  const auto [rows, classes] = f.rows;
  const bool soft_label = f.soft;
  const std::int64_t ignore = ignore_index(ctx);

  tensor& logits_grad = ctx.output("Logits@GRAD");
  logits_grad.resize(dtype::fp32, softmax.shape());
  const float* s = softmax.data<float>();
  const float* dl = loss_grad.data<float>();
  float* g = logits_grad.data<float>();
  const float* soft = soft_label ? label.data<float>() : nullptr;
  const std::int64_t* hard = soft_label ? nullptr : label.data<std::int64_t>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* sr = s + r * classes;
    float* gr = g + r * classes;
    if (soft_label) {
      const float* yr = soft + r * classes;
      for (std::int64_t j = 0; j < classes; ++j) gr[j] = (sr[j] - yr[j]) * dl[r];
      continue;
    }
    const std::int64_t y = hard[r];
    if (y == ignore) {
      std::fill(gr, gr + classes, 0.f);
      continue;
    }
    for (std::int64_t j = 0; j < classes; ++j)
      gr[j] = (sr[j] - (j == y ? 1.f : 0.f)) * dl[r];
  }
}

/// A tensor seen as lines along one axis: `outer` x `n` x `inner`, the `n` elements of a
/// line `inner` apart. Line l starts at offset (l / inner) * n * inner + l % inner.
struct axis_lines {
  std::int64_t outer, n, inner;

  std::int64_t count() const { return outer * inner; }
  std::int64_t start(std::int64_t line, std::int64_t length) const {
    return line / inner * length * inner + line % inner;
  }
};

axis_lines lines_along(const shape_t& dims, std::size_t axis) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= dims[d];
  for (std::size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  return {outer, dims[axis], inner};
}

/// The k largest (or, unless `largest`, smallest) elements of each line of X along `axis`,
/// best first: Out and Indices hold them along that axis. Equal values keep the lower index
/// first, so results do not depend on the sort's implementation.
void select_top_k(kernel_context& ctx, std::size_t axis, bool largest) {
  const tensor& x = ctx.input("X");
  const std::int64_t k = top_k_count(ctx, x, axis);
  const axis_lines lines = lines_along(x.shape(), axis);
  const std::int64_t n = lines.n, step = lines.inner;

  tensor& out = ctx.output("Out");
  tensor& indices = ctx.output("Indices");
  out.resize(dtype::fp32, with_dim(x.shape(), axis, k));
  indices.resize(dtype::int64, with_dim(x.shape(), axis, k));
  const float* xd = x.data<float>();
  float* od = out.data<float>();
  std::int64_t* id = indices.data<std::int64_t>();

  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t l = 0; l < lines.count(); ++l) {
    const float* xl = xd + lines.start(l, n);
    const auto at = [&](std::int64_t i) { return xl[i * step]; };
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](std::int64_t a, std::int64_t b) {
                        const bool better = largest ? at(a) > at(b) : at(a) < at(b);
                        return better || (at(a) == at(b) && a < b);
                      });
    const std::int64_t o = lines.start(l, k);
    for (std::int64_t j = 0; j < k; ++j) {
      id[o + j * step] = order[static_cast<std::size_t>(j)];
      od[o + j * step] = at(order[static_cast<std::size_t>(j)]);
    }
  }
}

/// X@GRAD of a top-k along `axis`: zero except where the forward picked an element, which
/// gets that element's Out@GRAD.
void scatter_top_k_grad(kernel_context& ctx, std::size_t axis) {
  const tensor& x = ctx.input("X");
  const tensor& indices = ctx.input("Indices");
  const tensor& out_grad = ctx.input("Out@GRAD");
  const std::int64_t k = top_k_grad_count(ctx, x, indices, out_grad, axis);
  const axis_lines lines = lines_along(x.shape(), axis);
  const std::int64_t n = lines.n, step = lines.inner;

  tensor& x_grad = ctx.output("X@GRAD");
  x_grad.resize(dtype::fp32, x.shape());
  float* g = x_grad.data<float>();
  std::fill(g, g + x_grad.numel(), 0.f);
  const std::int64_t* id = indices.data<std::int64_t>();
  const float* dout = out_grad.data<float>();
  for (std::int64_t l = 0; l < lines.count(); ++l) {
    const std::int64_t from = lines.start(l, k), to = lines.start(l, n);
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t i = id[from + j * step];
      if (i < 0 || i >= n)
        ctx.fail("Indices value " + std::to_string(i) + " in line " + std::to_string(l) +
                 " is outside [0, " + std::to_string(n) + ")");
      g[to + i * step] += dout[from + j * step];
    }
  }
}

/// A row is correct when any of its top-k Indices equals its Label.
void accuracy(kernel_context& ctx) {
  const tensor& out = ctx.input("Out");
  const tensor& indices = ctx.input("Indices");
  const tensor& label = ctx.input("Label");
  const auto [rows, k] = accuracy_rows(ctx, out, indices, label);

  const std::int64_t* id = indices.data<std::int64_t>();
  const std::int64_t* y = label.data<std::int64_t>();
  std::int32_t correct = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    if (std::find(id + r * k, id + (r + 1) * k, y[r]) != id + (r + 1) * k) ++correct;

  const auto total = static_cast<std::int32_t>(rows);
  ctx.output("Accuracy").resize(dtype::fp32, {1});
  ctx.output("Correct").resize(dtype::int32, {1});
  ctx.output("Total").resize(dtype::int32, {1});
  // An empty batch (a place that got no rows) counts as accuracy 0, not 0/0.
  ctx.output("Accuracy").data<float>()[0] =
      total == 0 ? 0.f : static_cast<float>(correct) / static_cast<float>(total);
  ctx.output("Correct").data<std::int32_t>()[0] = correct;
  ctx.output("Total").data<std::int32_t>()[0] = total;
}

} // namespace

void register_loss_kernels(kernel_registry& r) {
  register_loss_ops(r, place::kind::cpu,
                    {softmax_with_cross_entropy, softmax_with_cross_entropy_grad, cross_entropy,
                     cross_entropy_grad, cross_entropy2, cross_entropy_grad2, accuracy, select_top_k,
                     scatter_top_k_grad});
}

} // namespace pe

#include "kernels/loss_ops.hpp"

#include <string>
#include <utility>

#include "kernels/math_shapes.hpp"

namespace pe {

row_layout rows_of(const kernel_context& ctx, std::string_view slot, const tensor& t) {
  if (t.rank() == 0) ctx.fail(std::string(slot) + " must have rank >= 1, got a scalar");
  const std::int64_t cols = t.shape().back();
  return {cols == 0 ? 0 : t.numel() / cols, cols};
}

void expect_dtype(const kernel_context& ctx, std::string_view slot, const tensor& t, dtype wanted) {
  if (t.type() != wanted)
    ctx.fail(std::string(slot) + " must be " + to_string(wanted) + ", got " + to_string(t.type()));
}

shape_t with_last_dim(shape_t dims, std::int64_t last) {
  dims.back() = last;
  return dims;
}

shape_t with_dim(shape_t dims, std::size_t axis, std::int64_t size) {
  dims[axis] = size;
  return dims;
}

std::int64_t ignore_index(const kernel_context& ctx) { return ctx.attrs().get<std::int32_t>("ignore_index"); }

void check_label(const kernel_context& ctx, const tensor& label, const tensor& like, bool soft) {
  if (soft) {
    expect_dtype(ctx, "Label", label, dtype::fp32);
    if (label.shape() != like.shape())
      ctx.fail("soft Label has shape " + to_string(label.shape()) + ", expected " + to_string(like.shape()));
  } else {
    expect_dtype(ctx, "Label", label, dtype::int64);
    if (label.shape() != with_last_dim(like.shape(), 1))
      ctx.fail("Label has shape " + to_string(label.shape()) + ", expected " +
               to_string(with_last_dim(like.shape(), 1)));
  }
}

row_layout probability_xent_rows(const kernel_context& ctx, const tensor& x, const tensor& label, bool soft) {
  const row_layout layout = rows_of(ctx, "X", x);
  check_label(ctx, label, x, soft);
  return layout;
}

namespace {

/// Fails unless `loss_grad` (input `slot`) is FP32 with the dims of the loss of `like`.
void expect_loss_grad(const kernel_context& ctx, std::string_view slot, const tensor& loss_grad,
                      const tensor& like) {
  if (loss_grad.shape() != with_last_dim(like.shape(), 1))
    ctx.fail(std::string(slot) + " has shape " + to_string(loss_grad.shape()) + ", expected " +
             to_string(with_last_dim(like.shape(), 1)));
}

} // namespace

row_layout probability_xent_grad_rows(const kernel_context& ctx, const tensor& x, const tensor& label,
                                      bool soft, const tensor& loss_grad, std::string_view loss_slot) {
  const row_layout layout = probability_xent_rows(ctx, x, label, soft);
  expect_dtype(ctx, loss_slot, loss_grad, dtype::fp32);
  expect_loss_grad(ctx, loss_slot, loss_grad, x);
  return layout;
}

cross_entropy_grad2_front cross_entropy_grad2_front_of(const kernel_context& ctx, input_fn input) {
  const shape_t& xshape = ctx.input("XShape").shape();
  if (xshape.size() < 2 || xshape.back() != 0) ctx.fail("XShape must be [X's dims, 0], got " + to_string(xshape));
  cross_entropy_grad2_front f{shape_t(xshape.begin(), xshape.end() - 1), input(ctx, "Label", 0),
                              input(ctx, "MatchX", 0), input(ctx, "Y@GRAD", 0)};
  expect_dtype(ctx, "Label", f.label, dtype::int64);
  for (const auto& [slot, t] : {std::pair<const char*, const tensor*>{"Label", &f.label},
                                {"MatchX", &f.match_x},
                                {"Y@GRAD", &f.y_grad}})
    if (t->shape() != with_last_dim(f.x_dims, 1))
      ctx.fail(std::string(slot) + " has shape " + to_string(t->shape()) + ", expected " +
               to_string(with_last_dim(f.x_dims, 1)) + " for X " + to_string(f.x_dims) + " (from XShape)");
  expect_dtype(ctx, "MatchX", f.match_x, dtype::fp32);
  expect_dtype(ctx, "Y@GRAD", f.y_grad, dtype::fp32);
  return f;
}

softmax_xent_front softmax_xent_front_of(const kernel_context& ctx, const tensor& logits) {
  expect_dtype(ctx, "Logits", logits, dtype::fp32);
  const row_layout rows = rows_of(ctx, "Logits", logits);
  const auto axis = ctx.attrs().get<std::int32_t>("axis");
  if (axis != -1 && axis != static_cast<std::int32_t>(logits.rank()) - 1)
    ctx.fail("only the last axis is supported, got axis " + std::to_string(axis) + " for Logits " +
             to_string(logits.shape()));
  const bool soft = ctx.attrs().get<bool>("soft_label");
  return {rows, soft, ctx.attrs().get<bool>("use_softmax")};
}

softmax_xent_front softmax_xent_grad_front_of(const kernel_context& ctx, const tensor& softmax,
                                              const tensor& label, const tensor& loss_grad) {
  expect_dtype(ctx, "Softmax", softmax, dtype::fp32);
  const bool use_softmax = ctx.attrs().get<bool>("use_softmax");
  const bool soft = ctx.attrs().get<bool>("soft_label");
  if (!use_softmax) return {{0, 0}, soft, false};
  expect_dtype(ctx, "Loss@GRAD", loss_grad, dtype::fp32);
  const row_layout rows = rows_of(ctx, "Softmax", softmax);
  check_label(ctx, label, softmax, soft);
  expect_loss_grad(ctx, "Loss@GRAD", loss_grad, softmax);
  return {rows, soft, true};
}

std::int64_t top_k_count(const kernel_context& ctx, const tensor& x, std::size_t axis) {
  expect_dtype(ctx, "X", x, dtype::fp32);
  const std::int64_t n = x.dim(axis);
  const std::int64_t k = ctx.attrs().get<std::int32_t>("k");
  if (k < 1 || k > n)
    ctx.fail("k = " + std::to_string(k) + " must be in [1, " + std::to_string(n) + "] for X of shape " +
             to_string(x.shape()));
  return k;
}

std::int64_t top_k_grad_count(const kernel_context& ctx, const tensor& x, const tensor& indices,
                              const tensor& out_grad, std::size_t axis) {
  expect_dtype(ctx, "Indices", indices, dtype::int64);
  expect_dtype(ctx, "Out@GRAD", out_grad, dtype::fp32);
  const std::int64_t k = indices.rank() == x.rank() ? indices.dim(axis) : -1;
  if (out_grad.shape() != indices.shape() || indices.shape() != with_dim(x.shape(), axis, k))
    ctx.fail("Out@GRAD " + to_string(out_grad.shape()) + " and Indices " + to_string(indices.shape()) +
             " do not match X " + to_string(x.shape()));
  return k;
}

row_layout accuracy_rows(const kernel_context& ctx, const tensor& out, const tensor& indices,
                         const tensor& label) {
  expect_dtype(ctx, "Indices", indices, dtype::int64);
  expect_dtype(ctx, "Label", label, dtype::int64);
  if (indices.rank() != 2 || out.shape() != indices.shape())
    ctx.fail("Out " + to_string(out.shape()) + " and Indices " + to_string(indices.shape()) +
             " must both be [N, k]");
  const std::int64_t rows = indices.dim(0);
  if (label.shape() != shape_t{rows, 1})
    ctx.fail("Label has shape " + to_string(label.shape()) + ", expected [" + std::to_string(rows) + ", 1]");
  return {rows, indices.dim(1)};
}

namespace {

/// top_k's axis: the last of X, which must have rank >= 1.
std::size_t last_axis(const kernel_context& ctx) {
  const tensor& t = ctx.input("X");
  if (t.rank() == 0) ctx.fail("X must have rank >= 1, got a scalar");
  return t.rank() - 1;
}

/// top_k_v2's axis of X (negative: from the back). The K input (k computed at run time) is
/// not supported.
std::size_t top_k_v2_axis(const kernel_context& ctx) {
  if (ctx.has_input("K")) ctx.fail("the K input is not supported; give the k attribute");
  return normalize_axis(ctx, "axis", ctx.attrs().get<std::int32_t>("axis"), ctx.input("X").rank());
}

} // namespace

void register_loss_ops(kernel_registry& r, place::kind kind, const loss_kernels& k) {
  r.add("softmax_with_cross_entropy", kind, k.softmax_with_cross_entropy);
  r.add("softmax_with_cross_entropy_grad", kind, k.softmax_with_cross_entropy_grad);
  r.add("cross_entropy", kind, k.cross_entropy);
  r.add("cross_entropy_grad", kind, k.cross_entropy_grad);
  r.add("cross_entropy2", kind, k.cross_entropy2);
  r.add("cross_entropy_grad2", kind, k.cross_entropy_grad2);
  r.add("top_k", kind, [select = k.select_top_k](kernel_context& ctx) { select(ctx, last_axis(ctx), true); });
  r.add("top_k_grad", kind, [scatter = k.scatter_top_k_grad](kernel_context& ctx) { scatter(ctx, last_axis(ctx)); });
  // sorted = false lets the order be any; the kernels return them sorted all the same.
  r.add("top_k_v2", kind, [select = k.select_top_k](kernel_context& ctx) {
    select(ctx, top_k_v2_axis(ctx), ctx.attrs().get<bool>("largest"));
  });
  r.add("top_k_v2_grad", kind,
        [scatter = k.scatter_top_k_grad](kernel_context& ctx) { scatter(ctx, top_k_v2_axis(ctx)); });
  r.add("accuracy", kind, k.accuracy);
}

} // namespace pe

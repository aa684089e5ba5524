// CUDA kernels of the loss and metric ops: softmax_with_cross_entropy, cross_entropy,
// cross_entropy2, top_k, top_k_v2, accuracy and the grads of all but accuracy. Shapes and
// dtypes are checked on the host as the CPU kernels check them (devices/cpu/loss_kernels.cpp);
// label values are not (the device marks a bad row's loss NaN: loss_plans.hpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "devices/cuda/kernels/cuda_kernel_groups.hpp"
#include "devices/cuda/kernels/gpu_maps.cuh"
#include "devices/cuda/kernels/loss_plans.hpp"
#include "devices/math_shapes.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

struct row_layout {
  std::int64_t rows, cols;
};

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

void check_label(const kernel_context& ctx, const tensor& label, const tensor& like, bool soft) {
  if (soft) {
    expect_dtype(ctx, "Label", label, dtype::fp32);
    if (label.shape() != like.shape())
      ctx.fail("soft Label has shape " + to_string(label.shape()) + ", expected " +
               to_string(like.shape()));
  } else {
    expect_dtype(ctx, "Label", label, dtype::int64);
    if (label.shape() != with_last_dim(like.shape(), 1))
      ctx.fail("Label has shape " + to_string(label.shape()) + ", expected " +
               to_string(with_last_dim(like.shape(), 1)));
  }
}

std::int64_t ignore_index(const kernel_context& ctx) {
  return ctx.attrs().get<std::int32_t>("ignore_index");
}

// --- cross-entropy of probabilities --------------------------------------------------------

/// Loss (and MatchX when `match` is given) of X's rows against Label.
void probability_cross_entropy(kernel_context& ctx, const tensor& x, const tensor& label,
                               bool soft, tensor& loss, tensor* match) {
  const row_layout layout = rows_of(ctx, "X", x);
  check_label(ctx, label, x, soft);
  resize_output(ctx, loss, dtype::fp32, with_last_dim(x.shape(), 1));
  float* m = nullptr;
  if (match != nullptr) {
    resize_output(ctx, *match, dtype::fp32, with_last_dim(x.shape(), 1));
    m = match->data<float>();
  }
  const std::int64_t ignore = soft ? 0 : ignore_index(ctx);
  for_each(ctx, layout.rows,
           probability_xent_map{x.data<float>(), soft ? label.data<float>() : nullptr,
                                soft ? nullptr : label.data<std::int64_t>(), loss.data<float>(), m,
                                layout.cols, ignore});
}

/// X@GRAD of cross-entropy over probabilities: soft labels element-wise; hard ones scattered
/// per row into zeros, p from MatchX when given, else from X.
void probability_cross_entropy_grad(kernel_context& ctx, const tensor& x, const tensor& label,
                                    bool soft, const tensor& loss_grad,
                                    std::string_view loss_slot, tensor& x_grad) {
  const row_layout layout = rows_of(ctx, "X", x);
  check_label(ctx, label, x, soft);
  expect_dtype(ctx, loss_slot, loss_grad, dtype::fp32);
  if (loss_grad.shape() != with_last_dim(x.shape(), 1))
    ctx.fail(std::string(loss_slot) + " has shape " + to_string(loss_grad.shape()) +
             ", expected " + to_string(with_last_dim(x.shape(), 1)));
  write_unaliased(x_grad, {&x, &label, &loss_grad}, [&](tensor& g) {
    resize_output(ctx, g, dtype::fp32, x.shape());
    if (soft) {
      for_each(ctx, x.numel(),
               soft_probability_grad_map{x.data<float>(), label.data<float>(),
                                         loss_grad.data<float>(), g.data<float>(), layout.cols});
      return;
    }
    zero(ctx, g);
    for_each(ctx, layout.rows,
             hard_probability_grad_map{x.data<float>(), nullptr, label.data<std::int64_t>(),
                                       loss_grad.data<float>(), g.data<float>(), layout.cols,
                                       ignore_index(ctx)});
  });
}

void cross_entropy(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  expect_dtype(ctx, "X", x, dtype::fp32);
  const tensor& label = gpu_input(ctx, "Label");
  write_unaliased(ctx.output("Y"), {&x, &label}, [&](tensor& y) {
    probability_cross_entropy(ctx, x, label, ctx.attrs().get<bool>("soft_label"), y, nullptr);
  });
}

void cross_entropy_grad(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  expect_dtype(ctx, "X", x, dtype::fp32);
  probability_cross_entropy_grad(ctx, x, gpu_input(ctx, "Label"),
                                 ctx.attrs().get<bool>("soft_label"), gpu_input(ctx, "Y@GRAD"),
                                 "Y@GRAD", ctx.output("X@GRAD"));
}

void cross_entropy2(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  expect_dtype(ctx, "X", x, dtype::fp32);
  const tensor& label = gpu_input(ctx, "Label");
  tensor y, match;
  probability_cross_entropy(ctx, x, label, false, y, &match);
  shape_t xshape = x.shape();
  xshape.push_back(0);
  resize_output(ctx, ctx.output("XShape"), dtype::fp32, xshape);
  ctx.output("Y") = std::move(y);
  ctx.output("MatchX") = std::move(match);
}

void cross_entropy_grad2(kernel_context& ctx) {
  const shape_t& xshape = ctx.input("XShape").shape();
  if (xshape.size() < 2 || xshape.back() != 0)
    ctx.fail("XShape must be [X's dims, 0], got " + to_string(xshape));
  const shape_t x_dims(xshape.begin(), xshape.end() - 1);
  const tensor& label = gpu_input(ctx, "Label");
  const tensor& match_x = gpu_input(ctx, "MatchX");
  const tensor& y_grad = gpu_input(ctx, "Y@GRAD");
  expect_dtype(ctx, "Label", label, dtype::int64);
  for (const auto& [slot, t] : {std::pair<const char*, const tensor*>{"Label", &label},
                                {"MatchX", &match_x},
                                {"Y@GRAD", &y_grad}})
    if (t->shape() != with_last_dim(x_dims, 1))
      ctx.fail(std::string(slot) + " has shape " + to_string(t->shape()) + ", expected " +
               to_string(with_last_dim(x_dims, 1)) + " for X " + to_string(x_dims) +
               " (from XShape)");
  expect_dtype(ctx, "MatchX", match_x, dtype::fp32);
  expect_dtype(ctx, "Y@GRAD", y_grad, dtype::fp32);
  write_unaliased(ctx.output("X@GRAD"), {&label, &match_x, &y_grad}, [&](tensor& g) {
    resize_output(ctx, g, dtype::fp32, x_dims);
    const row_layout layout = rows_of(ctx, "X@GRAD", g);
    zero(ctx, g);
    for_each(ctx, layout.rows,
             hard_probability_grad_map{nullptr, match_x.data<float>(), label.data<std::int64_t>(),
                                       y_grad.data<float>(), g.data<float>(), layout.cols,
                                       ignore_index(ctx)});
  });
}

// --- softmax_with_cross_entropy --------------------------------------------------------

__global__ void softmax_xent_kernel(softmax_xent_plan p) {
  const std::int64_t rows = p.softmax.l.count();
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float max = block_reduce(p.softmax.max_partial(row, threadIdx.x, blockDim.x), max_op{});
    const double sum =
        block_reduce(p.softmax.sum_partial(row, threadIdx.x, blockDim.x, max), plus_op{});
    const double log_sum = log(sum);
    if (p.soft != nullptr) {
      const double loss =
          block_reduce(p.loss_partial(row, threadIdx.x, blockDim.x, max, log_sum), plus_op{});
      if (threadIdx.x == 0) p.finish_soft(row, loss);
    } else if (threadIdx.x == 0) {
      p.finish_hard(row, max, log_sum);
    }
    // Softmax last: it may be written over the Logits the loss reads.
    __syncthreads();
    p.softmax.write(row, threadIdx.x, blockDim.x, max, log_sum);
  }
}

void softmax_with_cross_entropy(kernel_context& ctx) {
  const tensor& logits = gpu_input(ctx, "Logits");
  const tensor& label = gpu_input(ctx, "Label");
  expect_dtype(ctx, "Logits", logits, dtype::fp32);
  const auto [rows, classes] = rows_of(ctx, "Logits", logits);
  const auto axis = ctx.attrs().get<std::int32_t>("axis");
  if (axis != -1 && axis != static_cast<std::int32_t>(logits.rank()) - 1)
    ctx.fail("only the last axis is supported, got axis " + std::to_string(axis) +
             " for Logits " + to_string(logits.shape()));
  const bool soft = ctx.attrs().get<bool>("soft_label");
  if (!ctx.attrs().get<bool>("use_softmax")) {
    tensor loss;
    probability_cross_entropy(ctx, logits, label, soft, loss, nullptr);
    tensor softmax;
    resize_output(ctx, softmax, dtype::fp32, logits.shape());
    copy_on_device(ctx, softmax.raw(), logits.raw(), logits.bytes());
    ctx.output("Loss") = std::move(loss);
    ctx.output("Softmax") = std::move(softmax);
    return;
  }
  check_label(ctx, label, logits, soft);
  tensor& softmax = ctx.output("Softmax");
  tensor& loss = ctx.output("Loss");
  // Loss must not overwrite what the kernel still reads; Softmax is written last (per row).
  write_unaliased(loss, {&logits, &label}, [&](tensor& l) {
    resize_output(ctx, l, dtype::fp32, with_last_dim(logits.shape(), 1));
    write_unaliased(softmax, {&label}, [&](tensor& s) {
      resize_output(ctx, s, dtype::fp32, logits.shape());
      if (rows == 0 || classes == 0) return;
      const softmax_xent_plan p{{logits.data<float>(), s.data<float>(), {rows, classes, 1}, false},
                                soft ? label.data<float>() : nullptr,
                                soft ? nullptr : label.data<std::int64_t>(),
                                l.data<float>(),
                                ignore_index(ctx)};
      softmax_xent_kernel<<<lane_blocks(rows), reduce_threads, 0, cuda_stream_of(ctx)>>>(p);
      check_launch(ctx, "softmax_xent_kernel");
    });
  });
}

void softmax_with_cross_entropy_grad(kernel_context& ctx) {
  const tensor& softmax = gpu_input(ctx, "Softmax");
  const tensor& label = gpu_input(ctx, "Label");
  const tensor& loss_grad = gpu_input(ctx, "Loss@GRAD");
  expect_dtype(ctx, "Softmax", softmax, dtype::fp32);
  const bool soft = ctx.attrs().get<bool>("soft_label");
  if (!ctx.attrs().get<bool>("use_softmax"))
    return probability_cross_entropy_grad(ctx, softmax, label, soft, loss_grad, "Loss@GRAD",
                                          ctx.output("Logits@GRAD"));
  expect_dtype(ctx, "Loss@GRAD", loss_grad, dtype::fp32);
  const auto [rows, classes] = rows_of(ctx, "Softmax", softmax);
  check_label(ctx, label, softmax, soft);
  if (loss_grad.shape() != with_last_dim(softmax.shape(), 1))
    ctx.fail("Loss@GRAD has shape " + to_string(loss_grad.shape()) + ", expected " +
             to_string(with_last_dim(softmax.shape(), 1)));
  (void)rows;
  // Element-wise over Softmax: in place on Softmax is fine, on Label or Loss@GRAD is not.
  write_unaliased(ctx.output("Logits@GRAD"), {&label, &loss_grad}, [&](tensor& g) {
    resize_output(ctx, g, dtype::fp32, softmax.shape());
    for_each(ctx, softmax.numel(),
             softmax_xent_grad_map{softmax.data<float>(), soft ? label.data<float>() : nullptr,
                                   soft ? nullptr : label.data<std::int64_t>(),
                                   loss_grad.data<float>(), g.data<float>(), classes,
                                   ignore_index(ctx)});
  });
}

// --- top_k -----------------------------------------------------------------------------

shape_t with_dim(shape_t dims, std::size_t axis, std::int64_t size) {
  dims[axis] = size;
  return dims;
}

void select_top_k(kernel_context& ctx, std::size_t axis, bool largest) {
  const tensor& x = gpu_input(ctx, "X");
  expect_dtype(ctx, "X", x, dtype::fp32);
  const lane_layout l = lane_layout::around(x.shape(), axis);
  const std::int64_t k = ctx.attrs().get<std::int32_t>("k");
  if (k < 1 || k > l.n)
    ctx.fail("k = " + std::to_string(k) + " must be in [1, " + std::to_string(l.n) +
             "] for X of shape " + to_string(x.shape()));
  tensor out, indices;
  resize_output(ctx, out, dtype::fp32, with_dim(x.shape(), axis, k));
  resize_output(ctx, indices, dtype::int64, with_dim(x.shape(), axis, k));
  for_each(ctx, l.count(),
           top_k_map{x.data<float>(), out.data<float>(), indices.data<std::int64_t>(), l, k, largest});
  ctx.output("Out") = std::move(out);
  ctx.output("Indices") = std::move(indices);
}

void scatter_top_k_grad(kernel_context& ctx, std::size_t axis) {
  const tensor& x = ctx.input("X"); // read for its dims only
  const tensor& indices = gpu_input(ctx, "Indices");
  const tensor& out_grad = gpu_input(ctx, "Out@GRAD");
  expect_dtype(ctx, "Indices", indices, dtype::int64);
  expect_dtype(ctx, "Out@GRAD", out_grad, dtype::fp32);
  const lane_layout l = lane_layout::around(x.shape(), axis);
  const std::int64_t k = indices.rank() == x.rank() ? indices.dim(axis) : -1;
  if (out_grad.shape() != indices.shape() || indices.shape() != with_dim(x.shape(), axis, k))
    ctx.fail("Out@GRAD " + to_string(out_grad.shape()) + " and Indices " +
             to_string(indices.shape()) + " do not match X " + to_string(x.shape()));
  write_unaliased(ctx.output("X@GRAD"), {&indices, &out_grad}, [&](tensor& g) {
    resize_output(ctx, g, dtype::fp32, x.shape());
    for_each(ctx, l.count(),
             top_k_grad_map{indices.data<std::int64_t>(), out_grad.data<float>(), g.data<float>(), l, k});
  });
}

std::size_t last_axis(const kernel_context& ctx, std::string_view slot) {
  const tensor& t = ctx.input(slot);
  if (t.rank() == 0) ctx.fail(std::string(slot) + " must have rank >= 1, got a scalar");
  return t.rank() - 1;
}

std::size_t top_k_v2_axis(const kernel_context& ctx) {
  if (ctx.has_input("K")) ctx.fail("the K input is not supported; give the k attribute");
  return normalize_axis(ctx, "axis", ctx.attrs().get<std::int32_t>("axis"), ctx.input("X").rank());
}

// --- accuracy --------------------------------------------------------------------------

__global__ void accuracy_kernel(accuracy_plan p) {
  const std::int64_t count = block_reduce(p.partial(threadIdx.x, blockDim.x), plus_op{});
  if (threadIdx.x == 0) p.finish(count);
}

void accuracy(kernel_context& ctx) {
  const tensor& out = ctx.input("Out");
  const tensor& indices = gpu_input(ctx, "Indices");
  const tensor& label = gpu_input(ctx, "Label");
  expect_dtype(ctx, "Indices", indices, dtype::int64);
  expect_dtype(ctx, "Label", label, dtype::int64);
  if (indices.rank() != 2 || out.shape() != indices.shape())
    ctx.fail("Out " + to_string(out.shape()) + " and Indices " + to_string(indices.shape()) +
             " must both be [N, k]");
  const std::int64_t rows = indices.dim(0);
  const std::int64_t k = indices.dim(1);
  if (label.shape() != shape_t{rows, 1})
    ctx.fail("Label has shape " + to_string(label.shape()) + ", expected [" +
             std::to_string(rows) + ", 1]");
  tensor acc, correct, total;
  resize_output(ctx, acc, dtype::fp32, {1});
  resize_output(ctx, correct, dtype::int32, {1});
  resize_output(ctx, total, dtype::int32, {1});
  accuracy_kernel<<<1, reduce_threads, 0, cuda_stream_of(ctx)>>>(
      accuracy_plan{indices.data<std::int64_t>(), label.data<std::int64_t>(), rows, k,
                    acc.data<float>(), correct.data<std::int32_t>(), total.data<std::int32_t>()});
  check_launch(ctx, "accuracy_kernel");
  ctx.output("Accuracy") = std::move(acc);
  ctx.output("Correct") = std::move(correct);
  ctx.output("Total") = std::move(total);
}

} // namespace

void register_loss_kernels(kernel_registry& r) {
  r.add("softmax_with_cross_entropy", gpu, softmax_with_cross_entropy);
  r.add("softmax_with_cross_entropy_grad", gpu, softmax_with_cross_entropy_grad);
  r.add("cross_entropy", gpu, cross_entropy);
  r.add("cross_entropy_grad", gpu, cross_entropy_grad);
  r.add("cross_entropy2", gpu, cross_entropy2);
  r.add("cross_entropy_grad2", gpu, cross_entropy_grad2);
  r.add("top_k", gpu, [](kernel_context& ctx) { select_top_k(ctx, last_axis(ctx, "X"), true); });
  r.add("top_k_grad", gpu,
        [](kernel_context& ctx) { scatter_top_k_grad(ctx, last_axis(ctx, "X")); });
  r.add("top_k_v2", gpu, [](kernel_context& ctx) {
    select_top_k(ctx, top_k_v2_axis(ctx), ctx.attrs().get<bool>("largest"));
  });
  r.add("top_k_v2_grad", gpu,
        [](kernel_context& ctx) { scatter_top_k_grad(ctx, top_k_v2_axis(ctx)); });
  r.add("accuracy", gpu, accuracy);
}

} // namespace pe::cuda

// CUDA kernels of the loss and metric ops: softmax_with_cross_entropy, cross_entropy,
// cross_entropy2, top_k, top_k_v2, accuracy and the grads of all but accuracy. Shapes and
// dtypes are checked on the host by kernels/loss_ops.hpp's fronts, shared with the CPU kernels;
// label values are not (the device marks a bad row's loss NaN: loss_plans.hpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cuda/loss_plans.hpp"
#include "kernels/loss_ops.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

// --- cross-entropy of probabilities --------------------------------------------------------

/// Loss (and MatchX when `match` is given) of X's rows against Label.
void probability_cross_entropy(kernel_context& ctx, const tensor& x, const tensor& label,
                               bool soft, tensor& loss, tensor* match) {
  const row_layout layout = probability_xent_rows(ctx, x, label, soft);
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
  const row_layout layout = probability_xent_grad_rows(ctx, x, label, soft, loss_grad, loss_slot);
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
  const cross_entropy_grad2_front f = cross_entropy_grad2_front_of(ctx, gpu_input);
  write_unaliased(ctx.output("X@GRAD"), {&f.label, &f.match_x, &f.y_grad}, [&](tensor& g) {
    resize_output(ctx, g, dtype::fp32, f.x_dims);
    const row_layout layout = rows_of(ctx, "X@GRAD", g);
    zero(ctx, g);
    for_each(ctx, layout.rows,
             hard_probability_grad_map{nullptr, f.match_x.data<float>(), f.label.data<std::int64_t>(),
                                       f.y_grad.data<float>(), g.data<float>(), layout.cols,
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
  const softmax_xent_front f = softmax_xent_front_of(ctx, logits);
  const auto [rows, classes] = f.rows;
  const bool soft = f.soft;
  if (!f.use_softmax) {
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
  const softmax_xent_front f = softmax_xent_grad_front_of(ctx, softmax, label, loss_grad);
  const bool soft = f.soft;
  if (!f.use_softmax)
    return probability_cross_entropy_grad(ctx, softmax, label, soft, loss_grad, "Loss@GRAD",
                                          ctx.output("Logits@GRAD"));
  const std::int64_t classes = f.rows.cols;
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

void select_top_k(kernel_context& ctx, std::size_t axis, bool largest) {
  const tensor& x = gpu_input(ctx, "X");
  const std::int64_t k = top_k_count(ctx, x, axis);
  const lane_layout l = lane_layout::around(x.shape(), axis);
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
  const std::int64_t k = top_k_grad_count(ctx, x, indices, out_grad, axis);
  const lane_layout l = lane_layout::around(x.shape(), axis);
  write_unaliased(ctx.output("X@GRAD"), {&indices, &out_grad}, [&](tensor& g) {
    resize_output(ctx, g, dtype::fp32, x.shape());
    for_each(ctx, l.count(),
             top_k_grad_map{indices.data<std::int64_t>(), out_grad.data<float>(), g.data<float>(), l, k});
  });
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
  const auto [rows, k] = accuracy_rows(ctx, out, indices, label);
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
  register_loss_ops(r, gpu,
                    {softmax_with_cross_entropy, softmax_with_cross_entropy_grad, cross_entropy,
                     cross_entropy_grad, cross_entropy2, cross_entropy_grad2, accuracy, select_top_k,
                     scatter_top_k_grad});
}

} // namespace pe::cuda

// CUDA kernels of softmax and log_softmax along any axis and their grads: one block per lane
// (softmax_plans.hpp), the lane's maximum and exp sum reduced in shared memory. The axis and
// the grad's inputs are checked by kernels/softmax_ops.hpp's front, shared with the CPU.
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cuda/softmax_plans.hpp"
#include "kernels/softmax_ops.hpp"

namespace pe::cuda {

namespace {

__global__ void softmax_kernel(softmax_plan p) {
  for (std::int64_t lane = blockIdx.x; lane < p.l.count(); lane += gridDim.x) {
    const float max = block_reduce(p.max_partial(lane, threadIdx.x, blockDim.x), max_op{});
    const double sum = block_reduce(p.sum_partial(lane, threadIdx.x, blockDim.x, max), plus_op{});
    p.write(lane, threadIdx.x, blockDim.x, max, log(sum));
  }
}

__global__ void softmax_grad_kernel(softmax_grad_plan p) {
  for (std::int64_t lane = blockIdx.x; lane < p.l.count(); lane += gridDim.x) {
    const double sum = block_reduce(p.sum_partial(lane, threadIdx.x, blockDim.x), plus_op{});
    p.write(lane, threadIdx.x, blockDim.x, sum);
  }
}

lane_layout lanes_of(const kernel_context& ctx, std::string_view slot, const tensor& t) {
  return lane_layout::around(t.shape(), softmax_axis(ctx, slot, t));
}

void softmax_forward(kernel_context& ctx, bool log) {
  const tensor& x = gpu_fp32_input(ctx, "X");
  const lane_layout l = lanes_of(ctx, "X", x);
  tensor& out = ctx.output("Out");
  resize_output(ctx, out, dtype::fp32, x.shape());
  if (l.n == 0 || l.count() == 0) return;
  softmax_kernel<<<lane_blocks(l.count()), reduce_threads, 0, cuda_stream_of(ctx)>>>(
      softmax_plan{x.data<float>(), out.data<float>(), l, log});
  check_launch(ctx, "softmax_kernel");
}

void softmax_backward(kernel_context& ctx, bool log) {
  const auto [out, dout] = softmax_grad_front_of(ctx, gpu_fp32_input);
  const lane_layout l = lanes_of(ctx, "Out", out);
  tensor& dx = ctx.output("X@GRAD");
  resize_output(ctx, dx, dtype::fp32, out.shape());
  if (l.n == 0 || l.count() == 0) return;
  softmax_grad_kernel<<<lane_blocks(l.count()), reduce_threads, 0, cuda_stream_of(ctx)>>>(
      softmax_grad_plan{out.data<float>(), dout.data<float>(), dx.data<float>(), l, log});
  check_launch(ctx, "softmax_grad_kernel");
}

} // namespace

void register_softmax_kernels(kernel_registry& r) {
  register_softmax_ops(r, place::kind::gpu, softmax_forward, softmax_backward);
}

} // namespace pe::cuda

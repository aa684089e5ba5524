// CUDA kernels of the control-flow ops (conditional_block, select_input, increment): the
// kernels of kernels/control_flow_ops.cpp with a GPU place's moves. Cond and Mask are read
// back to the host, waiting for the stream on its host thread, as Paddle's conditional_block
// copies Cond to the CPU; the sub-block's kernels then launch onto the same stream.
#include <cstdint>
#include <string>

#include "kernels/control_flow_ops.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"

namespace pe::cuda {

namespace {

/// out[0] = x[0] + step (one element; in place is fine).
template <class T>
struct increment_map {
  const T* x;
  T* out;
  T step;
  PE_HOST_DEVICE void operator()(std::int64_t) const { out[0] = x[0] + step; }
};

template <class T>
void add_step(kernel_context& ctx, const tensor& x, float step) {
  tensor& out = ctx.output("Out");
  const T* in = x.data<T>();
  resize_output(ctx, out, x.type(), x.shape()); // keeps X's buffer in place
  for_each(ctx, 1, increment_map<T>{in, out.data<T>(), static_cast<T>(step)});
}

void increment(kernel_context& ctx, const tensor& x, float step) {
  switch (x.type()) {
    case dtype::int64: return add_step<std::int64_t>(ctx, x, step);
    case dtype::int32: return add_step<std::int32_t>(ctx, x, step);
    default: return add_step<float>(ctx, x, step);
  }
}

void copy_to(kernel_context& ctx, const tensor& in, std::string_view slot) {
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    resize_output(ctx, out, in.type(), in.shape());
    copy_on_device(ctx, out.raw(), in.raw(), in.bytes());
  });
}

} // namespace

void register_control_flow_kernels(kernel_registry& r) {
  register_control_flow_ops(
      r, place::kind::gpu,
      {gpu_input, [](const kernel_context& ctx, const tensor& t) { return read_scalar<bool>(ctx, t); },
       [](const kernel_context& ctx, const tensor& t) { return read_scalar<std::int32_t>(ctx, t); }, copy_to,
       increment});
}

} // namespace pe::cuda

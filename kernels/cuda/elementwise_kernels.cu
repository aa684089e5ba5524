// CUDA kernels of the broadcasting binary ops elementwise_add, _sub, _mul, _div, _max, _min,
// _pow and their grads: Y broadcast against X by Paddle's rule (kernels/elementwise_ops.hpp's front, shared
// with the CPU kernels), through the index
// math of reduce_geometry.hpp; Y@GRAD is a block reduction per Y element.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/broadcast_maps.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/elementwise_ops.hpp"

namespace pe::cuda {

namespace {

/// X full, Y's span of X's axes kept, the other axes broadcast.
reduce_geometry elementwise_geometry(const kernel_context& ctx, const tensor& x, const tensor& y) {
  const std::vector<bool> reduced = broadcast_axes(ctx, x, y);
  try {
    return reduce_geometry::make(x.shape(), reduced);
  } catch (const error& e) {
    ctx.fail(e.what());
  }
}

/// Out = F(X, Y) in T; in place on X is fine, Out aliasing Y is not (Y is re-read).
template <class F, class T>
void forward_in(kernel_context& ctx, const tensor& x, const tensor& y) {
  const reduce_geometry g = elementwise_geometry(ctx, x, y);
  write_unaliased(ctx.output("Out"), {&y}, [&](tensor& out) {
    resize_output(ctx, out, x.type(), x.shape());
    for_each(ctx, g.full_numel(),
             broadcast_forward_map<F, T>{x.data<T>(), y.data<T>(), out.data<T>(), g, F{}});
  });
}

/// Out = F(X, Y) in FP32, or in INT64/INT32 where the op takes integers
/// (elementwise_integer_op: add, sub, mul).
template <class F>
void elementwise_forward(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  if (elementwise_integer_op(ctx.op_type())) {
    const tensor& y = gpu_input(ctx, "Y");
    switch (elementwise_integer_dtype(ctx, x, y)) {
      case dtype::int64: return forward_in<F, std::int64_t>(ctx, x, y);
      case dtype::int32: return forward_in<F, std::int32_t>(ctx, x, y);
      default: break;
    }
  }
  forward_in<F, float>(ctx, gpu_fp32_input(ctx, "X"), gpu_fp32_input(ctx, "Y"));
}

/// X@GRAD and Y@GRAD, each when bound; Y@GRAD first, as X@GRAD may overwrite Out@GRAD or X.
template <class G>
void elementwise_backward(kernel_context& ctx) {
  const elementwise_grad_front f = elementwise_grad_front_of(ctx, gpu_fp32_input);
  const tensor &x = f.x, &y = f.y, &dout = f.dout;
  const tensor* out = f.out;
  const reduce_geometry g = elementwise_geometry(ctx, x, y);
  const grad_inputs in{x.data<float>(), y.data<float>(),
                       out != nullptr ? out->data<float>() : nullptr, dout.data<float>(), g};
  if (ctx.has_output("Y@GRAD"))
    write_unaliased(ctx.output("Y@GRAD"), {&x, &y, &dout, out != nullptr ? out : &x},
                    [&](tensor& dy) {
                      resize_output(ctx, dy, dtype::fp32, y.shape());
                      reduce_blocks(ctx, g.small_numel(),
                                    broadcast_dy_plan<G>{in, dy.data<float>(), G{}});
                    });
  if (ctx.has_output("X@GRAD"))
    write_unaliased(ctx.output("X@GRAD"), {&y}, [&](tensor& dx) {
      resize_output(ctx, dx, dtype::fp32, x.shape());
      for_each(ctx, g.full_numel(), broadcast_dx_map<G>{in, dx.data<float>(), G{}});
    });
}

template <class F, class G>
void add_elementwise(kernel_registry& r, const std::string& type) {
  r.add(type, place::kind::gpu, elementwise_forward<F>);
  r.add(type + "_grad", place::kind::gpu, elementwise_backward<G>);
}

} // namespace

void register_elementwise_kernels(kernel_registry& r) {
  add_elementwise<add_fn, add_grad_fn>(r, "elementwise_add");
  add_elementwise<sub_fn, sub_grad_fn>(r, "elementwise_sub");
  add_elementwise<mul_fn, mul_grad_fn>(r, "elementwise_mul");
  add_elementwise<div_fn, div_grad_fn>(r, "elementwise_div");
  add_elementwise<max_fn, max_grad_fn>(r, "elementwise_max");
  add_elementwise<min_fn, min_grad_fn>(r, "elementwise_min");
  add_elementwise<pow_fn, pow_grad_fn>(r, "elementwise_pow");
}

} // namespace pe::cuda

#pragma once
// The broadcasting binary ops (elementwise_add, _sub, _mul, _div, _max, _min, _pow and their grads) on every
// kind of place: shared here is the front, Y's broadcast against X by Paddle's rule
// (kernels/math_shapes.hpp's infer_broadcast with the axis attribute) and the grad's inputs
// checked, with the failure messages. A place's kernels bring the arithmetic
// (kernels/cpu/elementwise_kernels.cpp: broadcast_layout loops;
// kernels/cuda/elementwise_kernels.cu: broadcast_maps.hpp).
#include <vector>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// X's axes that Y is broadcast along (true) rather than spans (false), after checking Y's
/// dims fit X's at the axis attribute.
std::vector<bool> broadcast_axes(const kernel_context& ctx, const tensor& x, const tensor& y);

/// The grad's inputs, read with `fp32_input`: X, Y, Out@GRAD (checked to have X's dims) and,
/// when bound, Out (likewise; null when not: the grads of add, sub and mul read no Out).
struct elementwise_grad_front {
  const tensor& x;
  const tensor& y;
  const tensor& dout;
  const tensor* out;
};
elementwise_grad_front elementwise_grad_front_of(const kernel_context& ctx, input_fn fp32_input);

} // namespace pe

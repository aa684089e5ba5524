#pragma once
// The broadcasting binary ops (elementwise_add, _sub, _mul, _div, _max, _min, _pow and their grads) on every
// kind of place: shared here is the front, Y's broadcast against X by Paddle's rule
// (kernels/math_shapes.hpp's infer_broadcast with the axis attribute) and the grad's inputs
// checked, with the failure messages. A place's kernels bring the arithmetic
// (kernels/cpu/elementwise_kernels.cpp: broadcast_layout loops;
// kernels/cuda/elementwise_kernels.cu: broadcast_maps.hpp).
#include <string_view>
#include <vector>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// Whether forward op `type` also computes on INT64 and INT32 operands (in their type, as
/// Paddle's integer kernels): elementwise_add, _sub and _mul, the index arithmetic of
/// programs such as BERT's position ids (cumsum(ones_like(ids)) - ones_like(ids)). The others
/// and every grad are FP32 only (an integer division by zero would trap).
constexpr bool elementwise_integer_op(std::string_view type) {
  return type == "elementwise_add" || type == "elementwise_sub" || type == "elementwise_mul";
}

/// The integer dtype an elementwise_integer_op computes in: X's when it is INT64 or INT32 and
/// Y has the same (fails naming both otherwise); FP32 when X is not an integer tensor.
dtype elementwise_integer_dtype(const kernel_context& ctx, const tensor& x, const tensor& y);

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

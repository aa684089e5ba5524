#pragma once
// softmax and log_softmax along any axis, and their grads (which, as in Paddle, read Out
// rather than X), on every kind of place: shared here is the front, the axis attribute read
// and checked and the grad's inputs checked, with the failure messages, and the registration
// under the op types. A place's kernels bring the arithmetic (kernels/cpu/softmax_kernels.cpp:
// loops per lane; kernels/cuda/softmax_kernels.cu: a block per lane).
#include <cstddef>
#include <string_view>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// The axis attribute for `t` (input `slot`), normalised (negative: from the back), after
/// checking t has rank >= 1.
std::size_t softmax_axis(const kernel_context& ctx, std::string_view slot, const tensor& t);

/// The grad's inputs, read with `fp32_input`: Out and Out@GRAD, checked to have Out's dims.
struct softmax_grad_front {
  const tensor &out, &dout;
};
softmax_grad_front softmax_grad_front_of(const kernel_context& ctx, input_fn fp32_input);

/// A softmax kernel: log_softmax's when `log`.
using softmax_kernel_fn = void (*)(kernel_context& ctx, bool log);

/// Registers softmax and log_softmax (`forward`) and their grads (`backward`) for places of
/// kind `kind`.
void register_softmax_ops(kernel_registry& r, place::kind kind, softmax_kernel_fn forward,
                          softmax_kernel_fn backward);

} // namespace pe

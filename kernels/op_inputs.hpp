#pragma once
// How the op fronts shared by every kind of place (kernels/*_ops.hpp) read a kernel's inputs:
// each place's kernels bring their own check (the CUDA kernels' gpu_input also checks that
// the tensor lies in GPU memory), so a front fails in the order and with the words the
// kernel always had.
#include <cstddef>
#include <string_view>

#include "kernels/kernel.hpp"

namespace pe {

/// Input `slot`[i] of the kernel, checked as that place's kernels check an input.
using input_fn = const tensor& (*)(const kernel_context& ctx, std::string_view slot, std::size_t i);

/// Input `slot`[i] as bound, unchecked (ctx.input): for kernels that check dtype and dims only.
inline const tensor& bound_input(const kernel_context& ctx, std::string_view slot, std::size_t i) {
  return ctx.input(slot, i);
}

} // namespace pe

#pragma once

// Host-side helpers the CUDA kernel files share: unary and binary element maps over a
// context's slots, mirroring kernels/cpu/math_kernels.hpp's map_unary / map_binary.

#include <string_view>

#include "kernels/cpu/math_kernels.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/element_maps.hpp"
#include "kernels/cuda/grid_stride.cuh"

namespace pe::cuda {

/// out[i] = f(in[i]); correct in place.
template <class F>
void gpu_map_unary(kernel_context& ctx, std::string_view in_slot, std::string_view out_slot, F f) {
  const tensor& in = gpu_fp32_input(ctx, in_slot);
  tensor& out = ctx.output(out_slot);
  resize_output(ctx, out, dtype::fp32, in.shape());
  for_each(ctx, in.numel(), unary_map<F>{in.data<float>(), out.data<float>(), f});
}

/// out[i] = f(a[i], b[i]) over two inputs of equal dims; correct in place.
template <class F>
void gpu_map_binary(kernel_context& ctx, std::string_view a_slot, std::string_view b_slot,
                std::string_view out_slot, F f) {
  const tensor& a = gpu_fp32_input(ctx, a_slot);
  const tensor& b = gpu_fp32_input(ctx, b_slot);
  expect_dims(ctx, b_slot, b, a.shape());
  tensor& out = ctx.output(out_slot);
  resize_output(ctx, out, dtype::fp32, a.shape());
  for_each(ctx, a.numel(), binary_map<F>{a.data<float>(), b.data<float>(), out.data<float>(), f});
}

} // namespace pe::cuda

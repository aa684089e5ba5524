// --check-nan-inf on GPU places: the first NaN or infinity of an FP32 tensor, found on the
// kernel's stream (first_nonfinite_map lowers one device slot with atomicMin) and read back.
// Reading back waits for the stream on its host thread: a debugging mode, as Paddle's
// FLAGS_check_nan_inf is.
#include <optional>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/finite_maps.hpp"
#include "kernels/cuda/grid_stride.cuh"

namespace pe::cuda {

namespace {

std::optional<nonfinite_element> first_nonfinite(const kernel_context& ctx, const tensor& t) {
  if (t.where().type != place::kind::gpu)
    ctx.fail("the GPU finite check was given a tensor on " + to_string(t.where()));
  if (t.numel() == 0) return std::nullopt;
  tensor slot = scratch(ctx, dtype::int64, {1});
  auto* first = static_cast<unsigned long long*>(slot.raw());
  check(ctx, cudaMemsetAsync(first, 0xff, sizeof *first, cuda_stream_of(ctx)), "cudaMemsetAsync");
  const float* x = t.data<float>();
  for_each(ctx, t.numel(), first_nonfinite_map{x, first});
  const auto index = read_back(ctx, first);
  if (index == no_nonfinite) return std::nullopt;
  const auto at = static_cast<std::int64_t>(index);
  return nonfinite_element{at, read_back(ctx, x + at)};
}

} // namespace

void register_finite_check_kernels(kernel_registry& r) {
  r.add_finite_check(place::kind::gpu, first_nonfinite);
}

} // namespace pe::cuda

#pragma once

// The element map of the GPU places' finite check (--check-nan-inf, finite_check_kernels.cu):
// every thread that visits a NaN or an infinity lowers one shared slot to its index, so the
// slot ends as the first such index whatever order the blocks run in. Written for the host
// too, where the tests run it serially over a host loop of (block, thread).

#include <cstdint>
#include <cstring>

#include "kernels/cuda/host_device.hpp"

namespace pe::cuda {

/// NaN and the infinities are the floats whose exponent bits are all ones. Bits, not
/// isfinite(), so that no fast-math flag can fold the test away.
PE_HOST_DEVICE inline bool is_finite_float(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0x7f800000u) != 0x7f800000u;
}

/// The slot's start: above every index, so an untouched slot means "all finite".
constexpr unsigned long long no_nonfinite = ~0ull;

struct first_nonfinite_map {
  const float* x;
  unsigned long long* first; // starts at no_nonfinite

  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    if (is_finite_float(x[i])) return;
    const auto index = static_cast<unsigned long long>(i);
#if defined(__CUDA_ARCH__)
    atomicMin(first, index);
#else
    if (index < *first) *first = index;
#endif
  }
};

} // namespace pe::cuda

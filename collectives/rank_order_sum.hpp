#pragma once

#include <cstddef>
#include <cstring>
#include <iterator>

namespace pe {

/// The summation every CPU-side collective shares (the in-process backend's chunks, the
/// network backend's direct and ring stages): out[i] = sources[0][begin + i] +
/// sources[1][begin + i] + ... for i < n, added in source order, which is rank order, so every
/// place, process and rerun gets the same bits. `Sources` is a sized range of pointers to
/// FP32 values (float* or const float*). `out` must not be one of the sources: callers sum a
/// block into a buffer of their own and copy it where it goes.
template <class Sources>
void sum_in_rank_order(const Sources& sources, std::size_t begin, std::size_t n, float* out) {
  std::memcpy(out, sources[0] + begin, n * sizeof(float));
  for (std::size_t p = 1; p < std::size(sources); ++p) {
    const float* src = sources[p] + begin;
    for (std::size_t i = 0; i < n; ++i) out[i] += src[i];
  }
}

} // namespace pe

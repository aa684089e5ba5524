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
///
/// The additions run four floats at a time in the compiler's vector type (SSE's width, which
/// every x86-64 has; other targets lower it as they can): at -O2, the build users train with,
/// the compiler leaves the plain loop scalar, and this sum is the arithmetic of every
/// all-reduce across places and processes. Each float is still one addition in rank order.
template <class Sources>
void sum_in_rank_order(const Sources& sources, std::size_t begin, std::size_t n, float* out) {
  typedef float four __attribute__((vector_size(4 * sizeof(float))));
  constexpr std::size_t lane = 4;
  std::memcpy(out, sources[0] + begin, n * sizeof(float));
  const std::size_t whole = n - n % lane;
  for (std::size_t p = 1; p < std::size(sources); ++p) {
    const float* src = sources[p] + begin;
    for (std::size_t i = 0; i < whole; i += lane) {
      four a, b; // loaded with memcpy: neither pointer need be 16-byte aligned
      std::memcpy(&a, out + i, sizeof a);
      std::memcpy(&b, src + i, sizeof b);
      a += b;
      std::memcpy(out + i, &a, sizeof a);
    }
    for (std::size_t i = whole; i < n; ++i) out[i] += src[i];
  }
}

} // namespace pe

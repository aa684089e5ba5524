#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>

namespace pe {

/// [begin, end) of chunk k of n elements cut into `parts`, the cuts on multiples of `unit`
/// elements (a cache line of floats for the in-process collectives, 1 for the ring across
/// processes); the chunks cover [0, n) in order, the last one ending at n. Every rank computes
/// the same cuts, which is all the collectives need of it: each element's summation order is
/// their own rule, not the chunk's.
inline std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, std::size_t k, std::size_t parts,
                                                       std::size_t unit = 1) {
  const std::size_t units = (n + unit - 1) / unit;
  return {std::min(n, units * k / parts * unit), std::min(n, units * (k + 1) / parts * unit)};
}

} // namespace pe

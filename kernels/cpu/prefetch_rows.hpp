#pragma once
// Software prefetch of table rows: the sparse kernels' one trick against memory latency.
#include <cstddef>
#include <cstdint>

namespace pe {

/// How many rows ahead of the one being processed a sparse kernel asks for a row's memory:
/// enough rows in between to hide a DRAM miss and its page walk (each row of a large
/// embedding lies on a page of its own), few enough that the lines are still cached when
/// their turn comes.
inline constexpr std::size_t prefetch_rows_ahead = 8;

/// Asks the CPU to start loading the `count` floats at `p` (every 64-byte line) for reading,
/// or for writing when `Write`. Why: an embedding's rows are scattered over a table far
/// larger than the caches and the TLB, and a loop that reads them one after another pays
/// every miss in turn; asked for a few rows ahead, the misses overlap. A hint only: it
/// never faults and changes no value.
template <bool Write = false>
inline void prefetch_floats(const float* p, std::int64_t count) {
  constexpr std::int64_t line = 64 / sizeof(float);
  for (std::int64_t i = 0; i < count; i += line) __builtin_prefetch(p + i, Write ? 1 : 0, 3);
}

} // namespace pe

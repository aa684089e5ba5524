#include "collectives/cpu/cpu_collective.hpp"

#include <algorithm>
#include <cstring>

#include "collectives/chunk_range.hpp"
#include "collectives/rank_order_sum.hpp"

namespace pe {

namespace {

constexpr std::size_t line = 64; // elements per chunk-boundary unit
constexpr std::size_t block = 1024; // elements summed through a stack buffer at a time

void apply(const cpu_collective& c, const std::vector<float*>& places, std::size_t begin,
           std::size_t end) {
  // One place's sum, reduction or broadcast is its own values: what a process with one
  // place runs before and after the network stage of every collective.
  if (places.size() == 1) return;
  if (c.what == cpu_collective::kind::broadcast) {
    for (std::size_t p = 0; p < places.size(); ++p)
      if (static_cast<int>(p) != c.root)
        std::memcpy(places[p] + begin, places[c.root] + begin, (end - begin) * sizeof(float));
    return;
  }
  float sum[block];
  for (std::size_t b = begin; b < end; b += block) {
    std::size_t e = std::min(end, b + block);
    sum_in_rank_order(places, b, e - b, sum);
    auto write = [&](float* dst) { std::memcpy(dst + b, sum, (e - b) * sizeof(float)); };
    if (c.what == cpu_collective::kind::reduce) write(places[c.root]);
    else for (float* dst : places) write(dst);
  }
}

} // namespace

std::size_t cpu_collective::total_elements() const {
  std::size_t n = 0;
  for (auto s : sizes) n += s;
  return n;
}

void cpu_collective::run_chunk(std::size_t k, std::size_t parts) const {
  auto [begin, end] = chunk_range(total_elements(), k, parts, line);
  // Walk the variables overlapping [begin, end) of their concatenation.
  std::size_t offset = 0;
  for (std::size_t v = 0; v < sizes.size() && offset < end; offset += sizes[v], ++v) {
    std::size_t lo = std::max(begin, offset), hi = std::min(end, offset + sizes[v]);
    if (lo < hi) apply(*this, buffers[v], lo - offset, hi - offset);
  }
}

} // namespace pe

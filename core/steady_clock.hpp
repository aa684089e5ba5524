#pragma once

#include <chrono>
#include <cstdint>

namespace pe {

/// Nanoseconds on the steady clock since its epoch: the one time base of collective spans,
/// trace recorders and the clock offsets processes exchange, so that they can be compared.
inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace pe

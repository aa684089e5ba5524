#pragma once

#include <cstdlib>
#include <string>

namespace pe {

/// PE_STREAM_PROFILE=1 (any value but empty or "0"): the device side keeps counts of where
/// its host threads spend their time (queued streams: launch code, waits, device calls; the
/// caching allocator: waits for its lock) and prints them to stderr when it stops. Read once.
inline bool host_profiling() {
  static const bool on = [] {
    const char* v = std::getenv("PE_STREAM_PROFILE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

} // namespace pe

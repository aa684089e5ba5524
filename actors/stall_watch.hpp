#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace pe {

/// Decides when a step has stalled: told a fingerprint of the step's progress (a sum of
/// counters that only grow: firings, finished work, stream items, collective arrivals) at
/// each tick of the waiting thread, it says a step stalled once the fingerprint has not
/// changed for the timeout. A step that is slow but moving changes it, so it never stalls.
/// One per executor, used by the thread that runs the step only: no locking, no thread.
class stall_watch {
 public:
  /// timeout 0: off (stalled() never says yes).
  explicit stall_watch(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  bool on() const { return timeout_.count() > 0; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  /// How long the waiting thread may block between two looks: a quarter of the timeout,
  /// at most 1 s, at least 1 ms, so that a stall is seen within 1/4 of the timeout late and
  /// an on-demand report within a second.
  std::chrono::milliseconds tick() const {
    using std::chrono::milliseconds;
    if (!on()) return milliseconds(1000);
    return std::max(milliseconds(1), std::min(milliseconds(1000), timeout_ / 4));
  }

  /// A step starts: its fingerprint now, at `now_ns` (steady clock).
  void start(std::uint64_t fingerprint, std::int64_t now_ns) {
    last_ = fingerprint;
    since_ns_ = now_ns;
  }

  /// Whether the step has made no progress for the timeout, given its fingerprint now.
  bool stalled(std::uint64_t fingerprint, std::int64_t now_ns) {
    if (fingerprint != last_) {
      start(fingerprint, now_ns);
      return false;
    }
    return on() && now_ns - since_ns_ >= std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_).count();
  }

  /// Seconds since the fingerprint last changed.
  double idle_s(std::int64_t now_ns) const { return static_cast<double>(now_ns - since_ns_) / 1e9; }

  /// After a report in report mode: the next one comes after another timeout without progress.
  void rearm(std::int64_t now_ns) { since_ns_ = now_ns; }

 private:
  std::chrono::milliseconds timeout_;
  std::uint64_t last_ = 0;
  std::int64_t since_ns_ = 0;
};

} // namespace pe

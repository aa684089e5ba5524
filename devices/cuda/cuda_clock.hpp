#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include <cuda_runtime_api.h>

#include "devices/cuda/cuda_event.hpp"

namespace pe {

/// The clock of one CUDA device, read on the host's steady clock (core/steady_clock.hpp),
/// so that traces show when kernels ran rather than when the host launched them.
///
/// Timing events (a pool of their own: the markers of queued streams are made without
/// timing) are placed by cudaEventRecord; once one has completed, its time is the anchor's
/// steady time plus cudaEventElapsedTime(anchor, event). The first anchor is an event the
/// constructor records on the idle device and waits for, taking the steady time when the
/// wait returns (a few microseconds late, the same for every event of the device). Elapsed
/// times are floats in milliseconds, which lose microseconds after a few seconds, so an
/// event more than a second past the anchor becomes the anchor: every reading stays within
/// about a second of its anchor and keeps the event's own resolution, about half a
/// microsecond. An event recorded before the anchor (another stream's, read late) reads as
/// a negative elapsed time, or, should CUDA refuse that, against the previous anchor.
class cuda_clock {
 public:
  /// Throws pe::error naming the device when it cannot record or wait.
  explicit cuda_clock(int device);
  ~cuda_clock();
  cuda_clock(const cuda_clock&) = delete;
  cuda_clock& operator=(const cuda_clock&) = delete;

  /// The device's timing events: taken to record on one of its streams, given back when
  /// not to be read (after reached_ns(), which takes its event, no more).
  cuda_event_pool& events() { return events_; }

  /// When the device reached `e`, a completed event of take(), in steady-clock
  /// nanoseconds. Takes `e`. Any thread. Throws pe::error when CUDA cannot time it.
  std::int64_t reached_ns(cudaEvent_t e);

 private:
  cuda_event_pool events_;
  std::mutex mutex_;
  cudaEvent_t anchor_ = nullptr;   // guarded by mutex_
  std::int64_t anchor_ns_ = 0;     // guarded by mutex_
  cudaEvent_t previous_ = nullptr; // the anchor before: guarded by mutex_
  std::int64_t previous_ns_ = 0;   // guarded by mutex_
};

/// The clock of CUDA device `device`, made on first use and shared by every place on it.
std::shared_ptr<cuda_clock> clock_of_device(int device);

} // namespace pe

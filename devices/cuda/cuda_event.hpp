#pragma once

#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

namespace pe {

/// CUDA events of one device ordinal, reused: each record of a stream takes one
/// (devices/queued_stream.hpp) and gives it back when nothing refers to that record any
/// more. Made with cudaEventDisableTiming (the cheapest to record and wait for) unless the
/// pool is for timing (cuda_clock).
class cuda_event_pool {
 public:
  explicit cuda_event_pool(int device, bool timing = false) : device_(device), timing_(timing) {}
  ~cuda_event_pool();
  cuda_event_pool(const cuda_event_pool&) = delete;
  cuda_event_pool& operator=(const cuda_event_pool&) = delete;

  /// A free event of this pool's device (made on it, whatever the calling thread's device).
  cudaEvent_t take();
  void give_back(cudaEvent_t e);
  int device() const { return device_; }

 private:
  int device_;
  bool timing_;
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

} // namespace pe

#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "devices/cuda/cuda_event.hpp"

namespace pe {

/// Page-locked host buffers that copies between pageable host memory and a GPU go through.
///
/// Why: a cudaMemcpyAsync from pageable memory is staged by the driver itself, and
/// synchronously: the launching thread (a copy stream's thread, which the compute stream
/// waits for at the start of every step) waits for the stream's earlier work and for the
/// transfer, and the copy threads of several places on one GPU take turns in the driver.
/// Staged here, a copy is a memcpy into a pinned buffer on the calling thread (the places'
/// threads in parallel) and an asynchronous transfer; the buffer is reused once the event
/// recorded after its transfer has completed (no host callback on the stream, which would
/// hold the stream until a driver thread ran it). A copy to the host (a fetch) lands in a
/// pinned buffer and waits for its event before the memcpy out: a copy into pageable memory
/// holds a lock of the driver meanwhile, which stalled the other places' launches (seen in
/// traces on an H100: a place's kernel launches stretched 2-7x during the other's fetch).
///
/// One per CUDA device (shared_per_device), shared by its places' copy streams.
class pinned_staging {
 public:
  /// Copies larger than this go straight from pageable memory: pinning that much host
  /// memory for one copy (a checkpoint's tensor) costs more than it saves.
  static constexpr std::size_t largest_staged = std::size_t{64} << 20;
  /// Pinned memory the pool keeps at most; a copy that would need more goes straight.
  static constexpr std::size_t most_held = std::size_t{512} << 20;

  explicit pinned_staging(std::shared_ptr<cuda_event_pool> events);
  ~pinned_staging();
  pinned_staging(const pinned_staging&) = delete;
  pinned_staging& operator=(const pinned_staging&) = delete;

  /// Copies `bytes` from host memory `src` to device memory `dst`, ordered on `stream` (of
  /// this pool's device): through a pinned buffer when one can be had, else directly.
  /// `src` may be reused as soon as this returns. Throws pe::error naming `what`.
  void copy_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
                      const std::string& what);

  /// Copies `bytes` from device memory `src` to host memory `dst`, ordered on `stream`, and
  /// returns once `dst` holds them (as a copy into pageable memory does). Throws pe::error.
  void copy_to_host(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
                    const std::string& what);

 private:
  struct buffer {
    void* host = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t in_flight = nullptr; ///< recorded after the last transfer from it; null: free
    bool taken = false;              ///< being filled or read by a copy right now
  };

  /// A free buffer of at least `bytes` (made when none is), marked taken; -1 when the pool
  /// may not grow that far. Caller holds mutex_.
  int take(std::size_t bytes);
  /// take() under the lock, for a copy of `bytes` (-1 when it is too large to stage); sets
  /// `host` to the buffer.
  int acquire(std::size_t bytes, void*& host);
  /// Gives buffer `i` back, reusable once `in_flight` (null: at once) has completed.
  void release(int i, cudaEvent_t in_flight);
  /// An event recorded after the work on `stream`; null when none could be recorded
  /// (`status` says why), after waiting for the stream instead.
  cudaEvent_t mark_end(cudaStream_t stream, cudaError_t& status);

  std::shared_ptr<cuda_event_pool> events_;
  mutable std::mutex mutex_;
  std::vector<buffer> buffers_;  // guarded by mutex_
  std::size_t held_ = 0;         // guarded by mutex_
};

/// The pinned_staging of CUDA device `device`.
std::shared_ptr<pinned_staging> pinned_staging_of(int device, std::shared_ptr<cuda_event_pool> events);

} // namespace pe

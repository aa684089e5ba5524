#include "devices/cuda/pinned_staging.hpp"

#include <cstring>

#include "core/error.hpp"
#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/per_device.hpp"

namespace pe {

namespace {

/// Buffers come in powers of two from 64 KiB, so that a step's feeds of one size keep
/// reusing the same buffers.
std::size_t buffer_size(std::size_t bytes) {
  std::size_t size = std::size_t{64} << 10;
  while (size < bytes) size *= 2;
  return size;
}

} // namespace

pinned_staging::pinned_staging(std::shared_ptr<cuda_event_pool> events) : events_(std::move(events)) {}

pinned_staging::~pinned_staging() {
  // At exit the context may be gone: errors are ignored.
  for (buffer& b : buffers_) {
    if (b.in_flight != nullptr) {
      (void)cudaEventSynchronize(b.in_flight);
      events_->give_back(b.in_flight);
    }
    (void)cudaFreeHost(b.host);
  }
}

int pinned_staging::take(std::size_t bytes) {
  int best = -1;
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    buffer& b = buffers_[i];
    if (b.taken) continue;
    if (b.in_flight != nullptr) {
      if (cudaEventQuery(b.in_flight) != cudaSuccess) continue; // still read by the device
      // An error is not ours to report: the stream that ran the copy reports it.
      events_->give_back(b.in_flight);
      b.in_flight = nullptr;
    }
    if (b.bytes >= bytes && (best < 0 || b.bytes < buffers_[static_cast<std::size_t>(best)].bytes))
      best = static_cast<int>(i);
  }
  if (best < 0) {
    const std::size_t size = buffer_size(bytes);
    if (held_ + size > most_held) return -1;
    void* host = nullptr;
    if (cudaHostAlloc(&host, size, cudaHostAllocPortable) != cudaSuccess) {
      (void)cudaGetLastError(); // out of pinnable memory: the copy goes straight instead
      return -1;
    }
    buffers_.push_back({host, size, nullptr});
    held_ += size;
    best = static_cast<int>(buffers_.size() - 1);
  }
  buffers_[static_cast<std::size_t>(best)].taken = true;
  return best;
}

int pinned_staging::acquire(std::size_t bytes, void*& host) {
  if (bytes > largest_staged) return -1;
  std::lock_guard<std::mutex> guard(mutex_);
  const int i = take(bytes);
  if (i >= 0) host = buffers_[static_cast<std::size_t>(i)].host;
  return i;
}

void pinned_staging::release(int i, cudaEvent_t in_flight) {
  std::lock_guard<std::mutex> guard(mutex_);
  buffer& b = buffers_[static_cast<std::size_t>(i)];
  b.taken = false;
  b.in_flight = in_flight;
}

cudaEvent_t pinned_staging::mark_end(cudaStream_t stream, cudaError_t& status) {
  cudaEvent_t done = nullptr;
  try {
    done = events_->take();
    status = cudaEventRecord(done, stream);
  } catch (const error&) {
    status = cudaErrorUnknown; // no event to be had
  }
  if (status == cudaSuccess) return done;
  // The transfer may still use the buffer and nothing marks its end: wait for it here.
  (void)cudaStreamSynchronize(stream);
  if (done != nullptr) events_->give_back(done);
  return nullptr;
}

void pinned_staging::copy_to_device(void* dst, const void* src, std::size_t bytes,
                                    cudaStream_t stream, const std::string& what) {
  if (bytes == 0) return;
  void* host = nullptr;
  const int i = acquire(bytes, host);
  if (i < 0) {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), what);
    return;
  }
  std::memcpy(host, src, bytes); // outside the lock: several places' threads at once
  cudaError_t status = cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream);
  const bool enqueued = status == cudaSuccess;
  cudaEvent_t done = enqueued ? mark_end(stream, status) : nullptr;
  release(i, done); // reused once `done` is
  check_cuda(status, what + (enqueued ? " (marking the end of a staged copy)" : " (from a pinned buffer)"));
}

void pinned_staging::copy_to_host(void* dst, const void* src, std::size_t bytes,
                                  cudaStream_t stream, const std::string& what) {
  if (bytes == 0) return;
  void* host = nullptr;
  const int i = acquire(bytes, host);
  if (i < 0) {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream), what);
    return;
  }
  cudaError_t status = cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream);
  if (status == cudaSuccess) {
    cudaEvent_t done = mark_end(stream, status);
    if (done != nullptr) {
      // Waits for the transfer only: no driver lock is held meanwhile, as it would be by a
      // copy into pageable memory.
      status = cudaEventSynchronize(done);
      events_->give_back(done);
    }
  }
  if (status == cudaSuccess) std::memcpy(dst, host, bytes);
  release(i, nullptr); // the transfer has ended (or failed)
  check_cuda(status, what + " (through a pinned buffer)");
}

std::shared_ptr<pinned_staging> pinned_staging_of(int device, std::shared_ptr<cuda_event_pool> events) {
  return shared_per_device<pinned_staging>(
      device, [&events] { return std::make_shared<pinned_staging>(std::move(events)); });
}

} // namespace pe

#include "devices/cuda/cuda_stream.hpp"

#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/cuda_memory.hpp"

namespace pe {

cuda_stream_backend::cuda_stream_backend(place where, stream_kind kind,
                                         std::shared_ptr<cuda_event_pool> events,
                                         std::shared_ptr<cuda_clock> clock)
    : place_(where), kind_(kind), events_(std::move(events)), clock_(std::move(clock)) {}

cuda_stream_backend::~cuda_stream_backend() {
  if (handle_ == nullptr) return;
  // Work still on the stream (an executor destroyed right after a failed step) may use
  // memory the allocator frees once this stream no longer takes part in its fences: let it
  // finish first, for at most 10 s, so that a device that never finishes (a collective whose
  // peer died) cannot hang the teardown.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (cudaStreamQuery(handle_) == cudaErrorNotReady && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  untrack_stream(this);
  if (!library_states_.empty()) {
    // Library handles are released on their device (cublasDestroy and cudnnDestroy wait for
    // the device's work), then the caller's device is restored.
    int caller = 0;
    const bool restore = cudaGetDevice(&caller) == cudaSuccess;
    (void)cudaSetDevice(place_.device);
    library_states_.clear();
    if (restore) (void)cudaSetDevice(caller);
  }
  (void)cudaStreamDestroy(handle_); // at exit the context may be gone
}

std::shared_ptr<void> cuda_stream_backend::library_state(const void* key,
                                                         const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard<std::mutex> guard(library_mutex_);
  auto it = library_states_.find(key);
  if (it == library_states_.end()) it = library_states_.emplace(key, make()).first;
  return it->second;
}

std::string cuda_stream_backend::describe() const {
  return "the " + to_string(kind_) + " stream of " + to_string(place_);
}

void cuda_stream_backend::start() {
  use_cuda_device(place_.device);
  check_cuda(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags for " + describe());
  track_stream(this);
}

stream_backend::marker cuda_stream_backend::record_from(cuda_event_pool& pool) {
  cudaEvent_t e = pool.take();
  const cudaError_t status = cudaEventRecord(e, handle_);
  if (status != cudaSuccess) {
    pool.give_back(e);
    check_cuda(status, "cudaEventRecord on " + describe());
  }
  return e;
}

stream_backend::marker cuda_stream_backend::record() {
  return record_from(*events_);
}

void cuda_stream_backend::wait(marker m) {
  check_cuda(cudaStreamWaitEvent(handle_, static_cast<cudaEvent_t>(m), 0),
             "cudaStreamWaitEvent on " + describe());
}

stream_backend::state cuda_stream_backend::query(marker m, std::string& message) {
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(m));
  if (status == cudaSuccess) return state::done;
  if (status == cudaErrorNotReady) return state::pending;
  message = "cudaEventQuery: " + cuda_error_text(status);
  return state::failed;
}

void cuda_stream_backend::release(marker m) {
  events_->give_back(static_cast<cudaEvent_t>(m));
}

stream_backend::marker cuda_stream_backend::record_timed() {
  return record_from(clock_->events());
}

stream::work_span cuda_stream_backend::take_span(marker begin, marker end) {
  std::int64_t start = 0;
  try {
    start = clock_->reached_ns(static_cast<cudaEvent_t>(begin));
  } catch (...) {
    clock_->events().give_back(static_cast<cudaEvent_t>(end));
    throw;
  }
  return {start, clock_->reached_ns(static_cast<cudaEvent_t>(end))};
}

void cuda_stream_backend::drop_span(marker begin, marker end) {
  for (marker m : {begin, end})
    if (m != nullptr) clock_->events().give_back(static_cast<cudaEvent_t>(m));
}

cuda_stream_backend& cuda_backend_of(stream& s) {
  auto* c = dynamic_cast<cuda_stream*>(&s);
  if (c == nullptr)
    throw error("a CUDA kernel was given the " + to_string(s.kind()) + " stream of " +
                to_string(s.where()) + ", which is not a CUDA stream");
  return c->cuda_backend();
}

cudaStream_t cuda_handle(stream& s) { return cuda_backend_of(s).handle(); }

} // namespace pe

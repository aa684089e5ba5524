#include "devices/cuda/cuda_clock.hpp"

#include <cmath>
#include <string>

#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/per_device.hpp"
#include "devices/steady_clock.hpp"

namespace pe {

namespace {

/// How far past the anchor an event may read before it becomes the anchor.
constexpr float anchor_span_ms = 1000.f;

} // namespace

cuda_clock::cuda_clock(int device) : events_(device, /*timing=*/true) {
  const std::string where = " for the clock of CUDA device " + std::to_string(device);
  int previous = -1;
  (void)cudaGetDevice(&previous);
  use_cuda_device(device);
  anchor_ = events_.take();
  // The legacy default stream: nothing of ours runs there, so the event completes at once.
  cudaError_t status = cudaEventRecord(anchor_, nullptr);
  if (status == cudaSuccess) status = cudaEventSynchronize(anchor_);
  anchor_ns_ = steady_ns();
  if (previous >= 0 && previous != device) (void)cudaSetDevice(previous); // the caller's stays
  if (status != cudaSuccess) {
    events_.give_back(anchor_); // the pool destroys it
    check_cuda(status, "cudaEventRecord / cudaEventSynchronize" + where);
  }
}

cuda_clock::~cuda_clock() {
  if (anchor_ != nullptr) events_.give_back(anchor_);
}

std::int64_t cuda_clock::reached_ns(cudaEvent_t e) {
  std::lock_guard<std::mutex> guard(mutex_);
  float ms = 0.f;
  const cudaError_t status = cudaEventElapsedTime(&ms, anchor_, e);
  if (status != cudaSuccess) {
    events_.give_back(e);
    check_cuda(status, "cudaEventElapsedTime on CUDA device " + std::to_string(events_.device()));
  }
  const std::int64_t ns = anchor_ns_ + std::llround(static_cast<double>(ms) * 1e6);
  if (ms > anchor_span_ms) {
    events_.give_back(anchor_);
    anchor_ = e;
    anchor_ns_ = ns;
  } else {
    events_.give_back(e);
  }
  return ns;
}

std::shared_ptr<cuda_clock> clock_of_device(int device) {
  return shared_per_device<cuda_clock>(device, [device] { return std::make_shared<cuda_clock>(device); });
}

} // namespace pe

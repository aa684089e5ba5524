#include "devices/cuda/cuda_clock.hpp"

#include <cmath>
#include <string>

#include "core/steady_clock.hpp"
#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/per_device.hpp"

namespace pe {

namespace {

/// How far past the anchor an event may read before it becomes the anchor.
constexpr std::int64_t anchor_span_ns = 1'000'000'000;

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
  if (previous_ != nullptr) events_.give_back(previous_);
}

std::int64_t cuda_clock::reached_ns(cudaEvent_t e) {
  std::lock_guard<std::mutex> guard(mutex_);
  float ms = 0.f;
  std::int64_t base_ns = anchor_ns_;
  cudaError_t status = cudaEventElapsedTime(&ms, anchor_, e);
  // An event of another stream read late may lie before the anchor: should CUDA refuse a
  // negative time, the previous anchor, a second or more older, lies before it.
  if (status != cudaSuccess && previous_ != nullptr) {
    base_ns = previous_ns_;
    status = cudaEventElapsedTime(&ms, previous_, e);
  }
  if (status != cudaSuccess) {
    events_.give_back(e);
    check_cuda(status, "cudaEventElapsedTime on CUDA device " + std::to_string(events_.device()));
  }
  const std::int64_t ns = base_ns + std::llround(static_cast<double>(ms) * 1e6);
  if (ns - anchor_ns_ > anchor_span_ns) {
    if (previous_ != nullptr) events_.give_back(previous_);
    previous_ = anchor_;
    previous_ns_ = anchor_ns_;
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

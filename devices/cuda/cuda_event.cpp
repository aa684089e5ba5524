#include "devices/cuda/cuda_event.hpp"

#include <string>

#include "devices/cuda/cuda_check.hpp"

namespace pe {

cuda_event_pool::~cuda_event_pool() {
  for (cudaEvent_t e : free_) (void)cudaEventDestroy(e); // errors at exit: the context is gone
}

cudaEvent_t cuda_event_pool::take() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  int previous = -1;
  (void)cudaGetDevice(&previous);
  use_cuda_device(device_);
  cudaEvent_t e = nullptr;
  const cudaError_t status =
      cudaEventCreateWithFlags(&e, timing_ ? cudaEventDefault : cudaEventDisableTiming);
  if (previous >= 0 && previous != device_) (void)cudaSetDevice(previous);
  check_cuda(status, "cudaEventCreateWithFlags on CUDA device " + std::to_string(device_));
  return e;
}

void cuda_event_pool::give_back(cudaEvent_t e) {
  std::lock_guard<std::mutex> guard(mutex_);
  free_.push_back(e);
}

} // namespace pe

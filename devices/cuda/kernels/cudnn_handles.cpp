#include "devices/cuda/kernels/cudnn_handles.hpp"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "devices/cuda/kernels/cuda_context.hpp"

namespace pe::cuda {

void check(const kernel_context& ctx, cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    ctx.fail(std::string(what) + " on " + to_string(ctx.where()) + ": " +
             cudnnGetErrorString(status));
}

cudnnHandle_t cudnn_handle(const kernel_context& ctx, cudaStream_t stream) {
  static std::mutex mutex;
  // By device and stream: a destroyed stream's address may come back for another device's.
  static auto* handles = new std::map<std::pair<int, cudaStream_t>, cudnnHandle_t>; // never destroyed
  int device = 0;
  check(ctx, cudaGetDevice(&device), "cudaGetDevice");
  std::lock_guard lock(mutex);
  auto it = handles->find({device, stream});
  if (it != handles->end()) return it->second;
  cudnnHandle_t h = nullptr;
  check(ctx, cudnnCreate(&h), "cudnnCreate");
  const cudnnStatus_t bound = cudnnSetStream(h, stream);
  if (bound != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(h);
    check(ctx, bound, "cudnnSetStream");
  }
  handles->emplace(std::pair{device, stream}, h);
  return h;
}

} // namespace pe::cuda

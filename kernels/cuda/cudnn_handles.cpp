#include "kernels/cuda/cudnn_handles.hpp"

#include <memory>
#include <string>

#include "kernels/cuda/cuda_context.hpp"

namespace pe::cuda {

void check(const kernel_context& ctx, cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    ctx.fail(std::string(what) + " on " + to_string(ctx.where()) + ": " +
             cudnnGetErrorString(status));
}

cudnnHandle_t cudnn_handle(const kernel_context& ctx) {
  static const char key = 0;
  const auto state = stream_library_state(ctx, &key, [&] {
    cudnnHandle_t h = nullptr;
    check(ctx, cudnnCreate(&h), "cudnnCreate");
    std::shared_ptr<void> owned(h, [](void* p) { (void)cudnnDestroy(static_cast<cudnnHandle_t>(p)); });
    check(ctx, cudnnSetStream(h, cuda_stream_of(ctx)), "cudnnSetStream");
    return owned;
  });
  return static_cast<cudnnHandle_t>(state.get());
}

} // namespace pe::cuda

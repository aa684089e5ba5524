#pragma once

// cuDNN handles, one per CUDA stream, as cublas_handles.hpp has for cuBLAS: a handle is bound
// to its stream (cudnnSetStream) and must not be used by two threads at once; each stream's
// launch code runs on that stream's own thread, so a handle per stream needs no further
// locking.

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "kernels/kernel.hpp"

namespace pe::cuda {

/// The cuDNN handle of the kernel's stream (made on the stream's thread on first use, bound
/// to the stream, released with it).
cudnnHandle_t cudnn_handle(const kernel_context& ctx);

/// Throws pe::error prefixed with the op, naming `what` and cuDNN's message, unless `status`
/// is CUDNN_STATUS_SUCCESS.
void check(const kernel_context& ctx, cudnnStatus_t status, const char* what);

} // namespace pe::cuda

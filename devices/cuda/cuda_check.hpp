#pragma once

#include <string>

#include <cuda_runtime_api.h>

namespace pe {

/// "cudaErrorInsufficientDriver (CUDA driver version is insufficient for CUDA runtime version)".
std::string cuda_error_text(cudaError_t status);

/// Throws pe::error "<what>: <error name> (<error text>)" unless `status` is cudaSuccess.
/// `what` names the call and the place, e.g. "cudaStreamCreate on gpu:1".
void check_cuda(cudaError_t status, const std::string& what);

/// Makes `device` the calling thread's current CUDA device (cudaSetDevice), checked.
void use_cuda_device(int device);

} // namespace pe

#include "devices/cuda/cuda_check.hpp"

#include "core/error.hpp"

namespace pe {

std::string cuda_error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

void check_cuda(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  // Clears a non-sticky error, so that the next call does not report this one again.
  (void)cudaGetLastError();
  throw error(what + ": " + cuda_error_text(status));
}

void use_cuda_device(int device) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return;
  check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
}

} // namespace pe

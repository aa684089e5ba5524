// The GPU inventory of the CUDA build: what the CUDA runtime reports.
#include "devices/cuda/cuda_inventory.hpp"
#include "devices/gpu_runtime.hpp"

#include <cstdlib>

#include <cuda_runtime_api.h>

#include "devices/cuda/cuda_check.hpp"

namespace pe {

bool gpu_build() {
  return true;
}

gpu_inventory query_gpus() {
  gpu_inventory inv;
  inv.built = true;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  // Without a driver the runtime returns an error and leaves count untouched: check the code.
  switch (status) {
    case cudaSuccess:
      inv.count = count;
      if (count == 0) inv.problem = "the CUDA driver shows no GPU (cudaGetDeviceCount: 0 devices";
      break;
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
      inv.problem = "no usable CUDA driver (cudaGetDeviceCount: " + cuda_error_text(status);
      break;
    case cudaErrorNoDevice:
      inv.problem = "no CUDA device (cudaGetDeviceCount: " + cuda_error_text(status);
      break;
    default:
      inv.problem = "the CUDA runtime found no usable GPU (cudaGetDeviceCount: " +
                    cuda_error_text(status);
      break;
  }
  if (!inv.problem.empty()) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (visible != nullptr) inv.problem += std::string(", CUDA_VISIBLE_DEVICES=") + visible;
    inv.problem += ")";
    (void)cudaGetLastError();
  }
  return inv;
}

std::string cuda_pci_bus_id(int device) {
  char id[32] = {}; // "dddd:bb:dd.f" and its terminator, with room to spare
  check_cuda(cudaDeviceGetPCIBusId(id, static_cast<int>(sizeof id), device),
             "cudaDeviceGetPCIBusId(" + std::to_string(device) + ")");
  return id;
}

} // namespace pe

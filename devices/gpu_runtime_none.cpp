// The GPU inventory of a build without the CUDA places (PE_WITH_CUDA off): none.
#include "devices/gpu_runtime.hpp"

namespace pe {

bool gpu_build() {
  return false;
}

gpu_inventory query_gpus() {
  gpu_inventory none;
  none.problem = "GPU places need the CUDA build (configure with -DPE_WITH_CUDA=ON and the CUDA "
                 "toolkit); this build runs on CPU places only (cpu:N)";
  return none;
}

} // namespace pe

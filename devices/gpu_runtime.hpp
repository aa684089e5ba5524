#pragma once

#include <string>

#include "core/place_list.hpp"

namespace pe {

/// What this process can use of GPUs: whether the build has the CUDA places, and how many
/// CUDA devices the runtime shows (after CUDA_VISIBLE_DEVICES). Plain C++: callers (option
/// parsing, the Python package, tests) need no CUDA headers.
struct gpu_inventory {
  bool built = false;  // this build has the CUDA places (PE_WITH_CUDA)
  int count = 0;       // visible CUDA devices; 0 when none or when the driver is missing
  std::string problem; // why count is 0: no CUDA build, no driver, or no device; else empty
};

/// Whether this build has the CUDA places; asks no runtime.
bool gpu_build();

/// Asks the CUDA runtime (once per call; cheap after the first).
gpu_inventory query_gpus();

/// `gpus` as the place-list parser checks a gpu:... list against it (none when this build
/// has no CUDA places, with the reason).
inline device_inventory as_device_inventory(const gpu_inventory& gpus) {
  return {gpus.built ? gpus.count : 0, gpus.problem, "numbered from 0 after CUDA_VISIBLE_DEVICES"};
}

} // namespace pe

#pragma once

// Places for the tests of GPU places, real or simulated on the host.

#include <vector>

#include "core/place.hpp"

namespace pe::testing {

/// Places 0 to n-1 of CUDA device 0 (`--places gpu:0xN`): logical places sharing one GPU.
inline std::vector<place> logical_gpu_places(int n) {
  std::vector<place> places;
  for (int i = 0; i < n; ++i) places.push_back(place::gpu(i, 0));
  return places;
}

} // namespace pe::testing

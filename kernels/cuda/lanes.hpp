#pragma once

// A tensor seen as [outer, n, inner] around one axis: `outer * inner` lanes of `n` elements
// `inner` apart. The softmax kernels give each lane a block; softmax_with_cross_entropy's
// rows are lanes with inner 1; top_k gives each lane a thread, writing lanes of length k.

#include <cstdint>
#include <vector>

#include "kernels/cuda/host_device.hpp"

namespace pe::cuda {

struct lane_layout {
  std::int64_t outer = 1, n = 1, inner = 1;

  /// The layout of `dims` around `axis` (< dims.size()).
  static lane_layout around(const std::vector<std::int64_t>& dims, std::size_t axis) {
    lane_layout l;
    for (std::size_t d = 0; d < dims.size(); ++d) (d < axis ? l.outer : d == axis ? l.n : l.inner) *= dims[d];
    return l;
  }

  PE_HOST_DEVICE std::int64_t count() const { return outer * inner; }
  PE_HOST_DEVICE std::int64_t stride() const { return inner; }
  /// The offset of lane l's first element in a tensor whose lanes have `length` elements.
  PE_HOST_DEVICE std::int64_t first(std::int64_t l, std::int64_t length) const {
    return l / inner * length * inner + l % inner;
  }
  PE_HOST_DEVICE std::int64_t first(std::int64_t l) const { return first(l, n); }
};

} // namespace pe::cuda

#pragma once

// transpose2's index math: for each element of Out (in memory order) the offset of the X
// element it copies, out dim i being X dim perm[i].

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/cuda/host_device.hpp"

namespace pe::cuda {

class permute_geometry {
 public:
  static constexpr int max_rank = 8;

  static permute_geometry make(const std::vector<std::int64_t>& in_dims,
                               const std::vector<std::size_t>& perm) {
    if (perm.size() > max_rank)
      throw error("transpose2: rank " + std::to_string(perm.size()) + " exceeds the CUDA "
                  "kernel's " + std::to_string(max_rank));
    permute_geometry g;
    g.rank_ = static_cast<int>(perm.size());
    std::vector<std::int64_t> in_strides(perm.size(), 1);
    for (std::size_t d = perm.size(); d-- > 1;) in_strides[d - 1] = in_strides[d] * in_dims[d];
    for (std::size_t i = 0; i < perm.size(); ++i) {
      g.out_dims_[i] = in_dims[perm[i]];
      g.in_strides_[i] = in_strides[perm[i]];
    }
    return g;
  }

  /// The X offset of Out element `to`.
  PE_HOST_DEVICE std::int64_t source(std::int64_t to) const {
    std::int64_t from = 0;
    for (int a = rank_ - 1; a >= 0; --a) {
      from += (to % out_dims_[a]) * in_strides_[a];
      to /= out_dims_[a];
    }
    return from;
  }

 private:
  int rank_ = 0;
  std::int64_t out_dims_[max_rank] = {};
  std::int64_t in_strides_[max_rank] = {};
};

/// out[i] = in[source(i)], elements moved as T words.
template <class T>
struct permute_map {
  const T* in;
  T* out;
  permute_geometry g;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { out[i] = in[g.source(i)]; }
};

} // namespace pe::cuda

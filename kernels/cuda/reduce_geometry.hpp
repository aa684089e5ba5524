#pragma once

// The index math of the broadcasting and reducing CUDA kernels: a "full" dense tensor and a
// "small" one holding only the full tensor's kept axes, the others broadcast (elementwise
// ops' Y, mean_grad's Out@GRAD) or reduced (Y@GRAD, mean, reduce_mean). The same geometry as
// kernels/cpu/math_kernels.hpp's broadcast_layout, as plain values a kernel takes by value:
// adjacent axes of one kind are merged and axes of extent 1 dropped, so at most
// `max_axes` runs remain for any rank the engine sees.

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/cuda/host_device.hpp"

namespace pe::cuda {

class reduce_geometry {
 public:
  static constexpr int max_axes = 8;

  /// `reduced[i]` marks full axis i as absent from the small tensor. Throws pe::error when the
  /// axes alternate between kept and reduced more than max_axes times.
  static reduce_geometry make(const std::vector<std::int64_t>& full,
                              const std::vector<bool>& reduced) {
    reduce_geometry g;
    for (std::size_t i = 0; i < full.size(); ++i) {
      g.full_numel_ *= full[i];
      if (full[i] == 1) continue;
      if (g.rank_ > 0 && g.reduced_[g.rank_ - 1] == reduced[i]) {
        g.extent_[g.rank_ - 1] *= full[i];
        continue;
      }
      if (g.rank_ == max_axes)
        throw error("reduce_geometry: more than " + std::to_string(max_axes) +
                    " alternating kept and reduced axes");
      g.extent_[g.rank_] = full[i];
      g.reduced_[g.rank_] = reduced[i];
      ++g.rank_;
    }
    for (std::size_t i = 0; i < full.size(); ++i)
      (reduced[i] ? g.reduce_count_ : g.small_numel_) *= full[i];
    return g;
  }

  PE_HOST_DEVICE std::int64_t full_numel() const { return full_numel_; }
  PE_HOST_DEVICE std::int64_t small_numel() const { return small_numel_; }
  /// Full elements mapping to each small element.
  PE_HOST_DEVICE std::int64_t reduce_count() const { return reduce_count_; }

  /// The small element full element `i` maps to.
  PE_HOST_DEVICE std::int64_t small_index(std::int64_t i) const {
    std::int64_t s = 0, stride = 1;
    for (int a = rank_ - 1; a >= 0; --a) {
      const std::int64_t idx = i % extent_[a];
      i /= extent_[a];
      if (!reduced_[a]) {
        s += idx * stride;
        stride *= extent_[a];
      }
    }
    return s;
  }

  /// The full element that is the `r`-th (in memory order) of those mapping to small
  /// element `j`, r < reduce_count().
  PE_HOST_DEVICE std::int64_t full_index(std::int64_t j, std::int64_t r) const {
    std::int64_t offset = 0, stride = 1;
    for (int a = rank_ - 1; a >= 0; --a) {
      std::int64_t& rest = reduced_[a] ? r : j;
      const std::int64_t idx = rest % extent_[a];
      rest /= extent_[a];
      offset += idx * stride;
      stride *= extent_[a];
    }
    return offset;
  }

 private:
  int rank_ = 0;
  std::int64_t extent_[max_axes] = {};
  bool reduced_[max_axes] = {};
  std::int64_t full_numel_ = 1;
  std::int64_t small_numel_ = 1;
  std::int64_t reduce_count_ = 1;
};

} // namespace pe::cuda

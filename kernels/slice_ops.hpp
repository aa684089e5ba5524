#pragma once
// slice (x[:, 0], x[1:3]: paddle's __getitem__ with plain integer bounds) and slice_grad on
// every kind of place. Shared here: the box the slice cuts from Input -- per axis in `axes`
// [start, end) after Paddle's rules (a negative bound counts from the end, both are clamped
// to [0, dim]), the other axes whole -- and Out's dims (the box's, less the `decrease_axis`
// axes, each of size 1; [1] where every axis is decreased, as Paddle 2.6), applied by shape
// inference (graph/ops/slice_ops.cpp, dims may be -1 = unknown) and by the kernels; and the
// index map from an Out element to its Input element, PE_HOST_DEVICE so the CPU kernel
// (kernels/cpu/slice_kernels.cpp) and the CUDA kernel (kernels/cuda/slice_kernels.cu, a
// thread per element) move the same elements. Bounds may come from tensors (StartsTensor,
// EndsTensor and their lists: x[:, i] with i a variable), read on the host when the kernel
// runs; shape inference then leaves the sliced axes' extents unknown.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/host_device.hpp"
#include "kernels/kernel.hpp"
#include "kernels/math_shapes.hpp"

namespace pe {

/// The box slice cuts from Input: its first index and extent per Input axis, and Out's dims.
struct slice_box {
  shape_t starts, extents, out_dims;
};

/// The box of slicing `in` (dims; -1 where unknown leaves that axis' extent unknown) along
/// `axes` from `starts` to `ends`, decreasing `decrease_axis`; fails naming the attribute that
/// does not fit.
template <failure_sink C>
slice_box slice_box_of(const C& ctx, const shape_t& in, const std::vector<std::int32_t>& axes,
                       const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& ends,
                       const std::vector<std::int32_t>& decrease_axis) {
  if (starts.size() != axes.size() || ends.size() != axes.size())
    ctx.fail("axes has " + std::to_string(axes.size()) + " entries but starts " +
             std::to_string(starts.size()) + " and ends " + std::to_string(ends.size()));
  slice_box b{shape_t(in.size(), 0), in, {}};
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const std::size_t a = normalize_axis(ctx, "axes", axes[k], in.size());
    const std::int64_t dim = in[a];
    if (dim < 0) { // unknown: the box's extent is too, unless the bounds alone give it
      b.extents[a] = starts[k] >= 0 && ends[k] >= starts[k] && ends[k] - starts[k] == 1 ? 1 : -1;
      continue;
    }
    auto clamp = [dim](std::int64_t v) {
      if (v < 0) v += dim;
      return v < 0 ? std::int64_t{0} : (v > dim ? dim : v);
    };
    const std::int64_t s = clamp(starts[k]), e = clamp(ends[k]);
    b.starts[a] = s;
    b.extents[a] = e > s ? e - s : 0;
  }
  std::vector<bool> dropped(in.size(), false);
  for (const std::int32_t d : decrease_axis) {
    const std::size_t a = normalize_axis(ctx, "decrease_axis", d, in.size());
    if (b.extents[a] != 1 && b.extents[a] != -1)
      ctx.fail("decrease_axis " + std::to_string(d) + " has size " + std::to_string(b.extents[a]) +
               " in the slice, not 1");
    dropped[a] = true;
  }
  for (std::size_t a = 0; a < in.size(); ++a)
    if (!dropped[a]) b.out_dims.push_back(b.extents[a]);
  if (b.out_dims.empty() && !decrease_axis.empty()) b.out_dims = {1};
  return b;
}

/// For each element of the box (in memory order) the offset of its Input element.
class slice_index {
 public:
  static constexpr int max_rank = 8;

  /// The index map of `box` over an Input of dims `in` (known); fails above max_rank.
  static slice_index make(const kernel_context& ctx, const shape_t& in, const slice_box& box);

  /// The Input offset of box element `i`.
  PE_HOST_DEVICE std::int64_t source(std::int64_t i) const {
    std::int64_t from = base_;
    for (int a = rank_ - 1; a >= 0; --a) {
      from += (i % extents_[a]) * strides_[a];
      i /= extents_[a];
    }
    return from;
  }

 private:
  int rank_ = 0;
  std::int64_t base_ = 0;
  std::int64_t extents_[max_rank] = {};
  std::int64_t strides_[max_rank] = {};
};

/// out[i] = in[source(i)] (slice) with `gather`, else out[source(i)] = in[i] (slice_grad's
/// scatter into a zeroed Input@GRAD); elements moved as T words.
template <class T>
struct slice_map {
  const T* in;
  T* out;
  slice_index index;
  bool gather;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    if (gather)
      out[i] = in[index.source(i)];
    else
      out[index.source(i)] = in[i];
  }
};

/// slice's and slice_grad's Input (read with `input`, which checks it as the place does), the
/// box and its index map.
struct slice_plan {
  const tensor& input;
  slice_box box;
  slice_index index;
};

/// Element `i` of an INT32 or INT64 tensor of the kernel's place, as the host sees it (a GPU
/// kernel reads it back from the device).
using slice_bound_reader = std::function<std::int64_t(const tensor& values, std::int64_t i)>;

/// The reader of bound tensors in host memory (the CPU kernels').
std::int64_t slice_bound_on_host(const tensor& values, std::int64_t i);

/// The plan of the op's bounds, as Paddle 2.6 takes them: the starts from StartsTensor (one
/// 1-D tensor, a value per axis), else from StartsTensorList (a one-element tensor per
/// axis), else the `starts` attribute; the ends alike. Bound tensors are INT32 or INT64;
/// another dtype, or a count other than the axes', fails naming the slot.
slice_plan slice_plan_of(const kernel_context& ctx, const tensor& input, const slice_bound_reader& read);

} // namespace pe

#pragma once
// cumsum on every kind of place: shared here is its geometry from X's dims and the axis and
// flatten attributes (also Out's dims for graph/ops' shape inference), and the scan of one
// lane, PE_HOST_DEVICE so that the CPU kernel (kernels/cpu/cumsum_kernels.cpp) and the CUDA
// kernel (kernels/cuda/cumsum_kernels.cu, a thread per lane) sum in the same order.
// cumsum's grad is itself a cumsum (of Out@GRAD, reverse flipped), as Paddle emits it.
#include <cstdint>

#include "kernels/cuda/host_device.hpp"
#include "kernels/kernel.hpp"
#include "kernels/math_shapes.hpp"

namespace pe {

/// X seen as [outer, length, inner] with the scanned axis in the middle, and Out's dims:
/// X's, or [numel] under flatten (which scans X as one row; so does a 0-D X).
struct cumsum_geometry {
  std::int64_t outer = 1, length = 1, inner = 1;
  shape_t out_dims;
};

/// The geometry of cumsum over `x` (dims; -1 where unknown at shape inference, leaving
/// outer/length/inner meaningless there); fails unless `axis` is one of X's axes when X is
/// scanned along one.
template <failure_sink C>
cumsum_geometry cumsum_geometry_of(const C& ctx, const shape_t& x, std::int32_t axis, bool flatten) {
  cumsum_geometry g;
  if (flatten || x.empty()) {
    bool known = true;
    for (const std::int64_t d : x) known = known && d >= 0;
    g.length = known ? numel_of(x) : -1;
    g.out_dims = flatten ? shape_t{g.length} : x;
    return g;
  }
  const std::size_t a = normalize_axis(ctx, "axis", axis, x.size());
  for (std::size_t i = 0; i < a; ++i) g.outer *= x[i];
  g.length = x[a];
  for (std::size_t i = a + 1; i < x.size(); ++i) g.inner *= x[i];
  g.out_dims = x;
  return g;
}

/// The scan of lane `lane` (of outer * inner): out[k] = x[0] + ... + x[k] along the axis
/// (exclusive: up to x[k - 1], 0 first; reverse: from the far end), summed in T (FP32, or
/// INT64/INT32 for the position ids BERT code computes as cumsum(ones_like(ids))) in scan
/// order as Paddle. Correct in place: each element is read before it is written.
template <class T>
struct cumsum_lanes {
  const T* x;
  T* out;
  std::int64_t length, inner;
  bool exclusive, reverse;
  PE_HOST_DEVICE void operator()(std::int64_t lane) const {
    const std::int64_t base = lane / inner * length * inner + lane % inner;
    T acc = 0;
    for (std::int64_t k = 0; k < length; ++k) {
      const std::int64_t p = base + (reverse ? length - 1 - k : k) * inner;
      const T v = x[p];
      out[p] = exclusive ? acc : acc + v;
      acc += v;
    }
  }
};

/// Whether cumsum scans `type`: FP32, INT64 or INT32 (as Paddle's CPU and GPU kernels).
constexpr bool cumsum_dtype(dtype type) {
  return type == dtype::fp32 || type == dtype::int64 || type == dtype::int32;
}

/// cumsum's geometry and scan from the kernel context's X dims and attributes, after
/// checking that X's dtype is one cumsum_dtype accepts.
struct cumsum_front {
  cumsum_geometry g;
  bool exclusive, reverse;
};
cumsum_front cumsum_front_of(const kernel_context& ctx, const tensor& x);

} // namespace pe

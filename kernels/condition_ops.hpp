#pragma once
// The condition ops on every kind of place: the comparisons (less_than, less_equal,
// greater_than, greater_equal, equal, not_equal) and the logical ops (logical_not,
// logical_and, logical_or, logical_xor), which write BOOL. Shared here: which operand is
// broadcast against which (Paddle's elementwise rule with the `axis` attribute, applied from
// the operand of higher rank, as Paddle's compare kernels do) and the element functors,
// PE_HOST_DEVICE so that the CPU kernels (kernels/cpu/condition_kernels.cpp) and the CUDA
// kernels (kernels/cuda/condition_kernels.cu) compute alike. graph/ops/condition_ops.cpp's
// shape inference uses the same broadcast.
#include <cmath>
#include <type_traits>
#include <utility>
#include <string>
#include <vector>

#include "kernels/cuda/host_device.hpp"
#include "kernels/math_shapes.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// A binary condition op's operands: the full one (Out has its dims) and the one broadcast
/// against it. `swapped`: X is the broadcast one (Y has the higher rank).
struct condition_broadcast {
  shape_t out;
  std::vector<bool> repeated; ///< per axis of `out`: the small operand is repeated along it
  bool swapped = false;
};

/// The broadcast of X against Y (dims; -1 where unknown at shape inference) by `axis`.
template <failure_sink C>
condition_broadcast condition_broadcast_of(const C& ctx, const shape_t& x, const shape_t& y, int axis) {
  condition_broadcast b;
  b.swapped = y.size() > x.size();
  const shape_t& full = b.swapped ? y : x;
  const broadcast_span span = infer_broadcast(ctx, full, b.swapped ? x : y, axis);
  b.out = full;
  b.repeated.assign(full.size(), true);
  for (std::size_t i = span.begin; i < span.end; ++i) b.repeated[i] = false;
  return b;
}

/// Why X and Y of a binary condition op cannot be compared ("" when they can): they must
/// share a dtype, as in Paddle.
inline std::string condition_dtype_problem(dtype x, dtype y) {
  if (x == y) return {};
  return "X is " + to_string(x) + " but Y is " + to_string(y) + "; both must have one dtype";
}

// The element functors: f(x, y) with x and y of the operands' element type T.
struct less_than_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const { return x < y; }
};
struct less_equal_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const { return x <= y; }
};
struct greater_than_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const { return x > y; }
};
struct greater_equal_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const { return x >= y; }
};
/// As Paddle's EqualFunctor: floating-point elements are equal within 1e-8.
struct equal_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) return std::fabs(static_cast<double>(x) - static_cast<double>(y)) < 1e-8;
    else return x == y;
  }
};
struct not_equal_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const { return !equal_fn{}(x, y); }
};
/// The logical ops take any dtype, an element being true when nonzero (Paddle's rule).
struct logical_and_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const { return static_cast<bool>(x) && static_cast<bool>(y); }
};
struct logical_or_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const { return static_cast<bool>(x) || static_cast<bool>(y); }
};
struct logical_xor_fn {
  template <class T>
  PE_HOST_DEVICE bool operator()(T x, T y) const { return static_cast<bool>(x) != static_cast<bool>(y); }
};

/// The operand order of a swapped broadcast: calls f(x, y) given (full, small) elements.
template <class F>
struct ordered_fn {
  F f;
  bool swapped;
  template <class T>
  PE_HOST_DEVICE bool operator()(T full, T small) const { return swapped ? f(small, full) : f(full, small); }
};

/// A binary condition op's inputs, read with `input` (each place's initialised-input check),
/// their dtypes checked alike and their broadcast found.
struct condition_front {
  const tensor& x;
  const tensor& y;
  condition_broadcast b;
  const tensor& full() const { return b.swapped ? y : x; }
  const tensor& small() const { return b.swapped ? x : y; }
};
condition_front condition_front_of(const kernel_context& ctx, input_fn input);

/// Registers the condition ops for places of kind `kind`: Binary<F>::run, a place's kernel
/// of the binary op with element functor F, for each comparison and logical functor, and
/// `logical_not`.
template <template <class> class Binary>
void register_condition_ops(kernel_registry& r, place::kind kind, kernel_fn logical_not) {
  r.add("less_than", kind, Binary<less_than_fn>::run);
  r.add("less_equal", kind, Binary<less_equal_fn>::run);
  r.add("greater_than", kind, Binary<greater_than_fn>::run);
  r.add("greater_equal", kind, Binary<greater_equal_fn>::run);
  r.add("equal", kind, Binary<equal_fn>::run);
  r.add("not_equal", kind, Binary<not_equal_fn>::run);
  r.add("logical_and", kind, Binary<logical_and_fn>::run);
  r.add("logical_or", kind, Binary<logical_or_fn>::run);
  r.add("logical_xor", kind, Binary<logical_xor_fn>::run);
  r.add("logical_not", kind, std::move(logical_not));
}

} // namespace pe

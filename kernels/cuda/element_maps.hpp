#pragma once

// Index-based wrappers of the element-wise functors: each is the body of one grid-stride
// iteration, op(i), over raw element pointers (device pointers on the GPU, host pointers in
// the host tests). grid_stride.cuh launches them; the host tests run them in a plain loop.
// Every map reads element i of all its inputs before writing element i of any output, so it
// is correct in place (output pointer equal to an input pointer) as the CPU kernels are.

#include <cstdint>

#include "kernels/cuda/host_device.hpp"

namespace pe::cuda {

/// y[i] = f(x[i]).
template <class F, class In = float, class Out = float>
struct unary_map {
  const In* x;
  Out* y;
  F f;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { y[i] = f(x[i]); }
};

/// z[i] = f(a[i], b[i]).
template <class F, class B = float>
struct binary_map {
  const float* a;
  const B* b;
  float* z;
  F f;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { z[i] = f(a[i], b[i]); }
};

/// z[i] = f(a[i], b[i], c[i]).
template <class F>
struct ternary_map {
  const float* a;
  const float* b;
  const float* c;
  float* z;
  F f;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { z[i] = f(a[i], b[i], c[i]); }
};

/// y[i] = value.
template <class T>
struct fill_map {
  T* y;
  T value;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { y[i] = value; }
};

/// y[i] += x[i] (sum's accumulation).
struct add_into_map {
  const float* x;
  float* y;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { y[i] += x[i]; }
};

} // namespace pe::cuda

#pragma once

// The shape rules of the math ops (mul, matmul_v2, elementwise_add, reduce_mean), shared by
// shape inference (graph/ops/math_ops.cpp, where dims may be -1 = unknown) and the kernels
// (concrete dims), so a program is checked at build time by the same rule its kernels apply.
// Each rule reports a violation through `ctx.fail`, which prefixes the op.

#include <cstdint>
#include <string>
#include <vector>

#include "devices/tensor.hpp"

namespace pe {

/// What reports an op's failure: shape_context at build time, kernel_context at run time.
template <class C>
concept failure_sink = requires(const C& c, const std::string& message) {
  c.fail(message);
};

/// Product of dims[begin, end); -1 when one of them is unknown (-1).
std::int64_t known_product(const shape_t& dims, std::size_t begin, std::size_t end);

/// Whether two dims may be equal: both known and equal, or either unknown.
inline bool dim_matches(std::int64_t a, std::int64_t b) { return a < 0 || b < 0 || a == b; }

// --- mul -------------------------------------------------------------------------------

/// mul's view of X as an m x k matrix and Y as k x n; -1 where unknown.
struct mul_dims {
  shape_t out; ///< X.dims[:x_num_col_dims] ++ Y.dims[y_num_col_dims:]
  std::int64_t m, k, n;
};

template <failure_sink C>
mul_dims infer_mul(const C& ctx, const shape_t& x, const shape_t& y, int x_num_col_dims,
                   int y_num_col_dims) {
  auto cut_of = [&](const char* slot, const shape_t& dims, const char* attr, int cut) {
    if (cut < 1 || static_cast<std::size_t>(cut) >= dims.size())
      ctx.fail(std::string(attr) + " = " + std::to_string(cut) + " must lie in [1, rank) for " +
               slot + " " + to_string(dims));
    return static_cast<std::size_t>(cut);
  };
  const std::size_t xn = cut_of("X", x, "x_num_col_dims", x_num_col_dims);
  const std::size_t yn = cut_of("Y", y, "y_num_col_dims", y_num_col_dims);
  const std::int64_t x_cols = known_product(x, xn, x.size());
  const std::int64_t y_rows = known_product(y, 0, yn);
  if (!dim_matches(x_cols, y_rows))
    ctx.fail("X " + to_string(x) + " flattened at x_num_col_dims = " + std::to_string(xn) +
             " has " + std::to_string(x_cols) + " columns but Y " + to_string(y) +
             " flattened at y_num_col_dims = " + std::to_string(yn) + " has " +
             std::to_string(y_rows) + " rows");
  shape_t out(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(xn));
  out.insert(out.end(), y.begin() + static_cast<std::ptrdiff_t>(yn), y.end());
  return {std::move(out), known_product(x, 0, xn), x_cols >= 0 ? x_cols : y_rows,
          known_product(y, yn, y.size())};
}

// --- matmul_v2 -------------------------------------------------------------------------

/// matmul_v2 as `batch` products op(X_b) [m x k] * op(Y_b) [k x n]; -1 where unknown.
struct matmul_dims {
  shape_t out; ///< X's batch dims ++ [m, n]
  std::int64_t batch, m, k, n;
  bool y_shared; ///< Y is one matrix used by every batch entry (rank(Y) == 2 < rank(X))
};

template <failure_sink C>
matmul_dims infer_matmul(const C& ctx, const shape_t& x, const shape_t& y, bool trans_x,
                         bool trans_y) {
  const auto shapes = [&] { return "X " + to_string(x) + " and Y " + to_string(y); };
  if (x.size() < 2 || y.size() < 2) ctx.fail("X and Y must have rank >= 2, got " + shapes());
  const bool y_shared = y.size() == 2 && x.size() > 2;
  if (!y_shared && x.size() != y.size())
    ctx.fail("batched operands need equal ranks or a rank-2 Y, got " + shapes());
  const std::size_t batch_rank = x.size() - 2;
  if (!y_shared)
    for (std::size_t i = 0; i < batch_rank; ++i)
      if (!dim_matches(x[i], y[i]))
        ctx.fail("batch dims differ at axis " + std::to_string(i) + ": " + shapes());
  const std::int64_t x_rows = x[batch_rank], x_cols = x[batch_rank + 1];
  const std::int64_t y_rows = y[y.size() - 2], y_cols = y.back();
  const std::int64_t m = trans_x ? x_cols : x_rows, kx = trans_x ? x_rows : x_cols;
  const std::int64_t ky = trans_y ? y_cols : y_rows, n = trans_y ? y_rows : y_cols;
  if (!dim_matches(kx, ky))
    ctx.fail("inner dims differ (" + std::to_string(kx) + " vs " + std::to_string(ky) + ") for " +
             shapes() + " with trans_x = " + (trans_x ? "true" : "false") +
             ", trans_y = " + (trans_y ? "true" : "false"));
  shape_t out(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(batch_rank));
  out.push_back(m);
  out.push_back(n);
  return {std::move(out), known_product(x, 0, batch_rank), m, kx >= 0 ? kx : ky, n, y_shared};
}

// --- elementwise broadcast -------------------------------------------------------------

/// The axes [begin, end) of X that Y spans under Paddle's elementwise broadcast rule; Y is
/// repeated over the axes outside them.
struct broadcast_span {
  std::size_t begin, end;
};

/// Paddle's rule: Y's dims equal the run of X's dims starting at `axis` (-1: rank(X) -
/// rank(Y)), after Y's trailing 1s are dropped (Y [3, 1] against X [2, 3, 4] spans axis 1).
template <failure_sink C>
broadcast_span infer_broadcast(const C& ctx, const shape_t& x, const shape_t& y, int axis) {
  const auto shapes = [&] {
    return "X " + to_string(x) + ", Y " + to_string(y) + ", axis " + std::to_string(axis);
  };
  if (y.size() > x.size()) ctx.fail("Y must not have a higher rank than X: " + shapes());
  const auto free_axes = static_cast<int>(x.size() - y.size());
  const int begin = axis == -1 ? free_axes : axis;
  if (begin < 0 || begin > free_axes)
    ctx.fail("axis must be -1 or lie in [0, rank(X) - rank(Y)]: " + shapes());
  std::size_t spanned = y.size();
  while (spanned > 0 && y[spanned - 1] == 1) --spanned;
  const auto first = static_cast<std::size_t>(begin);
  for (std::size_t i = 0; i < spanned; ++i)
    if (!dim_matches(x[first + i], y[i]))
      ctx.fail("Y dim " + std::to_string(i) + " does not match X dim " + std::to_string(first + i) +
               " (only trailing 1s of Y broadcast): " + shapes());
  return {first, first + spanned};
}

// --- reduce ----------------------------------------------------------------------------

/// reduce_mean's reduced axes of a rank-`rank` X as a mask: `dims` (negative counts from
/// the back) or every axis when `reduce_all` is set or `dims` is empty, as in Paddle.
template <failure_sink C>
std::vector<bool> reduced_axes(const C& ctx, std::size_t rank,
                               const std::vector<std::int32_t>& dims, bool reduce_all) {
  std::vector<bool> mask(rank, reduce_all || dims.empty());
  if (reduce_all) return mask;
  const auto r = static_cast<std::int64_t>(rank);
  for (std::int32_t d : dims) {
    if (d < -r || d >= r)
      ctx.fail("dim " + std::to_string(d) + " is out of range for X of rank " +
               std::to_string(rank));
    mask[static_cast<std::size_t>(d < 0 ? d + r : d)] = true;
  }
  return mask;
}

/// X's dims with the masked axes set to 1 (`keep_dim`) or removed; [1] when none remain.
shape_t reduced_dims(const shape_t& x, const std::vector<bool>& reduced, bool keep_dim);

} // namespace pe

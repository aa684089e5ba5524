#pragma once

// The shape rules of the math ops (mul, matmul_v2, the elementwise ops, softmax, reduce_mean)
// and of the shape ops (reshape2, flatten_contiguous_range, transpose2, squeeze2, unsqueeze2,
// concat, split),
// shared by shape inference (graph/ops/*.cpp, where dims may be -1 = unknown) and the kernels
// (concrete dims), so a program is checked at build time by the same rule its kernels apply.
// Each rule reports a violation through `ctx.fail`, which prefixes the op.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/checked_math.hpp"
#include "core/tensor.hpp"

namespace pe {

/// What reports an op's failure: shape_context at build time, kernel_context at run time.
template <class C>
concept failure_sink = requires(const C& c, const std::string& message) {
  c.fail(message);
};

/// Product of dims[begin, end); -1 when one of them is unknown (-1). Throws pe::error when it
/// overflows int64.
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

// --- axes ------------------------------------------------------------------------------

/// `axis` of a rank-`rank` tensor counted from the front; a negative axis counts from the
/// back, as in Paddle. Fails unless it lies in [-rank, rank); `what` names it ("axis",
/// "start_axis").
template <failure_sink C>
std::size_t normalize_axis(const C& ctx, const std::string& what, std::int64_t axis,
                           std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    ctx.fail(what + " " + std::to_string(axis) + " is out of range for X of rank " +
             std::to_string(rank) + " (valid: [" + std::to_string(-r) + ", " +
             std::to_string(r) + "))");
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

// --- reduce ----------------------------------------------------------------------------

/// The reduce ops' reduced axes of a rank-`rank` X as a mask: `dims` (reduce_mean's INTS,
/// reduce_sum's LONGS; negative counts from the back) or every axis when `reduce_all` is set
/// or `dims` is empty, as in Paddle.
template <failure_sink C, class Int>
std::vector<bool> reduced_axes(const C& ctx, std::size_t rank, const std::vector<Int>& dims,
                               bool reduce_all) {
  std::vector<bool> mask(rank, reduce_all || dims.empty());
  if (reduce_all) return mask;
  const auto r = static_cast<std::int64_t>(rank);
  for (const std::int64_t d : dims) {
    if (d < -r || d >= r)
      ctx.fail("dim " + std::to_string(d) + " is out of range for X of rank " +
               std::to_string(rank));
    mask[static_cast<std::size_t>(d < 0 ? d + r : d)] = true;
  }
  return mask;
}

/// reduce_sum's in_dtype and out_dtype (VarType numbers): each -1 (X's dtype) or FP32, the
/// one dtype the engine sums in; Paddle's cast to another dtype is refused, naming it.
template <failure_sink C>
void expect_fp32_reduce_dtypes(const C& ctx, std::int32_t in_dtype, std::int32_t out_dtype) {
  for (const auto& [name, value] : {std::pair<const char*, std::int32_t>{"in_dtype", in_dtype},
                                    {"out_dtype", out_dtype}})
    if (value != -1 && value != static_cast<std::int32_t>(dtype::fp32))
      ctx.fail(std::string(name) + " " + std::to_string(value) +
               " is not supported: only -1 (X's dtype) or 5 (FP32)");
}

/// X's dims with the masked axes set to 1 (`keep_dim`) or removed; [1] when none remain.
shape_t reduced_dims(const shape_t& x, const std::vector<bool>& reduced, bool keep_dim);

// --- shape ops -------------------------------------------------------------------------

/// "[2, -1, 0]": an INTS attribute in messages.
std::string to_string(const std::vector<std::int32_t>& values);

/// The XShape output of the shape ops: [0, X's dims]. It carries X's dims, not its data, to
/// the grad op.
shape_t xshape_dims(const shape_t& x);

/// X's dims recovered from XShape (its dims without the leading 0).
template <failure_sink C>
shape_t dims_of_xshape(const C& ctx, const shape_t& xshape) {
  if (xshape.empty()) ctx.fail("XShape must be [0, X's dims], got []");
  return {xshape.begin() + 1, xshape.end()};
}

/// reshape2's Out dims for X and its `shape` attribute, as Paddle: 0 copies X's dim at the
/// same index, one -1 takes what the others leave of X's element count. When X's count is
/// unknown (a -1 in X), the -1 stays unknown and the count is not checked.
template <failure_sink C>
shape_t reshape_dims(const C& ctx, const shape_t& x, const std::vector<std::int32_t>& shape) {
  const auto which = [&] { return "shape " + to_string(shape) + " for X " + to_string(x); };
  shape_t out;
  std::size_t inferred = shape.size();
  std::int64_t capacity = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t s = shape[i];
    if (s == -1) {
      if (inferred != shape.size()) ctx.fail("more than one -1 in " + which());
      inferred = i;
      out.push_back(-1);
      continue;
    }
    if (s < -1)
      ctx.fail("shape[" + std::to_string(i) + "] = " + std::to_string(s) +
               " must be > 0, 0 (copy X's dim) or -1 (infer): " + which());
    if (s == 0 && i >= x.size())
      ctx.fail("shape[" + std::to_string(i) + "] = 0 copies a dim X does not have: " + which());
    out.push_back(s == 0 ? x[i] : s);
    auto next = checked_mul(capacity, out.back());
    if (!next) ctx.fail("the element count of " + which() + " overflows int64");
    capacity = *next;
  }
  const std::int64_t count = known_product(x, 0, x.size());
  if (count < 0) return out;
  if (inferred != shape.size()) {
    if (capacity <= 0 || count % capacity != 0)
      ctx.fail("X's " + std::to_string(count) + " elements do not fill " + which());
    out[inferred] = count / capacity;
  } else if (capacity != count) {
    ctx.fail("X's " + std::to_string(count) + " elements do not fill " + which());
  }
  return out;
}

/// flatten_contiguous_range's Out dims: X's axes start_axis..stop_axis (negative: from the
/// back) merged into one; a 0-D X becomes [1], as in Paddle.
template <failure_sink C>
shape_t flatten_dims(const C& ctx, const shape_t& x, std::int32_t start_axis,
                     std::int32_t stop_axis) {
  if (x.empty()) return {1};
  const std::size_t start = normalize_axis(ctx, "start_axis", start_axis, x.size());
  const std::size_t stop = normalize_axis(ctx, "stop_axis", stop_axis, x.size());
  if (start > stop)
    ctx.fail("start_axis " + std::to_string(start_axis) + " comes after stop_axis " +
             std::to_string(stop_axis) + " for X " + to_string(x));
  shape_t out(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(start));
  out.push_back(known_product(x, start, stop + 1));
  out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>(stop + 1), x.end());
  return out;
}

/// transpose2's permutation: `axis` (negative: from the back) must list each of X's axes
/// once. Out dim i is X dim perm[i].
template <failure_sink C>
std::vector<std::size_t> transpose_perm(const C& ctx, std::size_t rank,
                                        const std::vector<std::int32_t>& axis) {
  const auto bad = [&] {
    ctx.fail("axis " + to_string(axis) + " must list each of the " + std::to_string(rank) +
             " axes of X once");
  };
  if (axis.size() != rank) bad();
  std::vector<std::size_t> perm;
  std::vector<bool> seen(rank, false);
  for (std::int32_t a : axis) {
    perm.push_back(normalize_axis(ctx, "axis entry", a, rank));
    if (seen[perm.back()]) bad();
    seen[perm.back()] = true;
  }
  return perm;
}

/// `dims` permuted: out[i] = dims[perm[i]].
shape_t permuted(const shape_t& dims, const std::vector<std::size_t>& perm);

/// squeeze2's Out dims, as Paddle: `axes` empty removes every dim of 1; otherwise each listed
/// axis (negative: from the back) is removed when its dim is 1 and kept when it is not. At
/// build time a listed unknown dim (-1) is removed too, as Paddle's compile-time rule does.
template <failure_sink C>
shape_t squeeze_dims(const C& ctx, const shape_t& x, const std::vector<std::int32_t>& axes) {
  std::vector<bool> removed(x.size(), false);
  for (std::size_t i = 0; i < x.size(); ++i) removed[i] = axes.empty() && x[i] == 1;
  for (std::int32_t a : axes) {
    const std::size_t i = normalize_axis(ctx, "axes entry", a, x.size());
    removed[i] = x[i] == 1 || x[i] == -1;
  }
  shape_t out;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!removed[i]) out.push_back(x[i]);
  return out;
}

/// unsqueeze2's Out dims, as Paddle: a 1 is inserted at each of `axes` in turn, an axis
/// counting positions in the dims built so far (negative: from the back, -1 appends).
template <failure_sink C>
shape_t unsqueeze_dims(const C& ctx, const shape_t& x, const std::vector<std::int32_t>& axes) {
  std::vector<bool> inserted(x.size(), false);
  for (std::int32_t a : axes) {
    const auto rank = static_cast<std::int64_t>(inserted.size());
    const std::int64_t at = a < 0 ? a + rank + 1 : a;
    if (at < 0 || at > rank)
      ctx.fail("axes entry " + std::to_string(a) + " is out of range for inserting into " +
               std::to_string(rank) + " dims (valid: [" + std::to_string(-rank - 1) + ", " +
               std::to_string(rank) + "]), axes " + to_string(axes) + ", X " + to_string(x));
    inserted.insert(inserted.begin() + at, true);
  }
  shape_t out;
  auto next = x.begin();
  for (bool one : inserted) out.push_back(one ? 1 : *next++);
  return out;
}


// --- concat, split ---------------------------------------------------------------------

/// concat's Out dims: the inputs `xs` (at least one) have one rank and agree off `axis`
/// (negative: from the back); Out's `axis` dim is the sum of theirs, -1 when one is unknown.
template <failure_sink C>
shape_t concat_dims(const C& ctx, const std::vector<shape_t>& xs, std::int32_t axis) {
  if (xs.empty()) ctx.fail("X binds no variables");
  const shape_t& first = xs.front();
  const std::size_t a = normalize_axis(ctx, "axis", axis, first.size());
  shape_t out = first;
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const shape_t& x = xs[i];
    const auto bad = [&] {
      ctx.fail("X[" + std::to_string(i) + "] " + to_string(x) + " does not match X[0] " +
               to_string(first) + " off axis " + std::to_string(a));
    };
    if (x.size() != first.size()) bad();
    for (std::size_t d = 0; d < x.size(); ++d)
      if (d != a && !dim_matches(x[d], first[d])) bad();
    out[a] = out[a] < 0 || x[a] < 0 ? -1 : out[a] + x[a];
  }
  return out;
}

/// split's Out dims, one per output, as Paddle: `num` > 0 cuts X's `axis` dim (negative:
/// from the back) into `num` equal parts; otherwise `sections` lists the parts' sizes, one
/// of them -1 to take what the others leave. An unknown X dim leaves the inferred sizes -1.
/// The parts must be as many as the `outputs` variables Out binds: checked before anything
/// is sized by num, which a hostile program may set to 2^31 - 1.
template <failure_sink C>
std::vector<shape_t> split_dims(const C& ctx, const shape_t& x, std::int32_t axis,
                                std::int32_t num, const std::vector<std::int32_t>& sections,
                                std::size_t outputs) {
  const std::size_t a = normalize_axis(ctx, "axis", axis, x.size());
  const std::int64_t total = x[a];
  const auto which = [&] {
    return "X " + to_string(x) + " at axis " + std::to_string(axis) + " with num " +
           std::to_string(num) + ", sections " + to_string(sections);
  };
  const auto expect_parts = [&](std::size_t parts) {
    if (parts != outputs)
      ctx.fail("Out binds " + std::to_string(outputs) + " variables for " + std::to_string(parts) +
               " parts: " + which());
  };
  std::vector<std::int64_t> sizes;
  if (num > 0) {
    if (!sections.empty()) ctx.fail("give num or sections, not both: " + which());
    expect_parts(static_cast<std::size_t>(num));
    if (total >= 0 && total % num != 0) ctx.fail("X's axis dim does not divide evenly: " + which());
    sizes.assign(static_cast<std::size_t>(num), total < 0 ? -1 : total / num);
  } else {
    if (sections.empty()) ctx.fail("num must be > 0 or sections non-empty: " + which());
    expect_parts(sections.size());
    std::size_t inferred = sections.size();
    std::int64_t known = 0;
    for (std::size_t i = 0; i < sections.size(); ++i) {
      if (sections[i] == -1 && inferred == sections.size()) {
        inferred = i;
      } else if (sections[i] < 0) {
        ctx.fail("sections may hold one -1 and sizes >= 0 only: " + which());
      } else {
        known += sections[i];
      }
      sizes.push_back(sections[i]);
    }
    if (total >= 0) {
      if (inferred != sections.size() && known <= total)
        sizes[inferred] = total - known;
      else if (inferred != sections.size() || known != total)
        ctx.fail("sections do not add up to X's axis dim: " + which());
    }
  }
  std::vector<shape_t> outs(sizes.size(), x);
  for (std::size_t i = 0; i < sizes.size(); ++i) outs[i][a] = sizes[i];
  return outs;
}

} // namespace pe

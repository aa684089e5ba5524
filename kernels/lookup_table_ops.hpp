#pragma once
// lookup_table_v2 (Paddle 2.6's nn.Embedding) and lookup_table_v2_grad on every kind of place,
// and lookup_table (v1, fluid's layers.embedding) and lookup_table_grad, which differ only in
// Ids: v1's are INT64 whose last dim is 1, which Out drops (Out = Ids' dims but the last + [D]).
// W [V, D] is the table and Ids (INT64 or INT32, any dims) the rows to read:
//   Out = Ids' dims + [D], Out[i] = W[Ids[i]], zeros where Ids[i] is padding_idx;
//   W@GRAD [V, D] (dense) = zeros, then each Out@GRAD[i] added to row Ids[i] in index order
//   (the rows of a repeated id add up), none for padding_idx. Ids gets no gradient.
// padding_idx (Paddle writes it as LONG, -1 for none): p >= 0 is that row, p in [-V, -1) is
// row V + p. An id outside [0, V) that is not padding_idx fails the CPU kernels, naming the id
// and V. With is_sparse the gradient is SELECTED_ROWS (kernels/cpu/lookup_table_kernels.cpp:
// a row per id, padding_idx's left out); GPU places refuse it.
// Shared here: those rules, applied by shape inference (graph/ops/embedding_ops.cpp, where dims
// may be -1 = unknown) and by the kernels, and each op's front, the inputs read and checked and
// the attributes read, with the failure messages. A place's kernels bring the gather and the
// scatter (kernels/cpu/lookup_table_kernels.cpp: loops over the ids;
// kernels/cuda/lookup_table_kernels.cu: an element map, and a block per row of W scanning the
// ids in order).
#include <cstdint>
#include <string>
#include <string_view>

#include "core/tensor.hpp"
#include "kernels/kernel.hpp"
#include "kernels/math_shapes.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// padding_idx's "none", and what lookup_padding_row returns for it.
constexpr std::int64_t no_padding = -1;

/// Fails when is_sparse asks for a SELECTED_ROWS gradient where a place's kernels have none
/// (GPU places: only CPU places run sparse gradients so far).
template <failure_sink C>
void expect_dense_lookup(const C& ctx, bool is_sparse) {
  if (is_sparse)
    ctx.fail("is_sparse (a SELECTED_ROWS W@GRAD) runs on CPU places only; use CPU places or save "
             "the program with sparse=False");
}

/// Fails unless W's dims are [V, D].
template <failure_sink C>
void expect_lookup_table(const C& ctx, const shape_t& w) {
  if (w.size() != 2) ctx.fail("W must be [V, D] (rank 2), got " + to_string(w));
}

/// Which of the two ops: lookup_table (v1) or lookup_table_v2.
enum class lookup_version { v1, v2 };

/// The version of op type `type` (lookup_table[_grad]: v1, lookup_table_v2[_grad]: v2).
inline lookup_version lookup_version_of(std::string_view type) {
  return type.rfind("lookup_table_v2", 0) == 0 ? lookup_version::v2 : lookup_version::v1;
}

/// Fails unless Ids fit `version`: INT64 or INT32 of any dims (v2); INT64 whose last dim is 1
/// (v1, as Paddle's LookupTableOp; -1, unknown, passes shape inference).
template <failure_sink C>
void expect_lookup_ids(const C& ctx, dtype ids, const shape_t& dims, lookup_version version) {
  if (version == lookup_version::v2) {
    if (ids != dtype::int64 && ids != dtype::int32)
      ctx.fail("Ids must be INT64 or INT32, got " + to_string(ids));
    return;
  }
  if (ids != dtype::int64) ctx.fail("lookup_table's Ids must be INT64, got " + to_string(ids));
  if (dims.empty() || (dims.back() != 1 && dims.back() != -1))
    ctx.fail("lookup_table's Ids must end in a dim of 1 ([..., 1]), got " + to_string(dims) +
             " (lookup_table_v2 takes ids of any dims)");
}

/// The row of W that padding_idx names for a table of `rows` rows: p >= 0 itself, p in
/// [-V, -1) V + p, -1 none (no_padding). Fails for p outside [-V, V) when V is known; with V
/// unknown (-1) p is returned as given (the kernels check it against the table they get).
template <failure_sink C>
std::int64_t lookup_padding_row(const C& ctx, std::int64_t padding_idx, std::int64_t rows) {
  if (padding_idx == no_padding || rows < 0) return padding_idx;
  if (padding_idx < -rows || padding_idx >= rows)
    ctx.fail("padding_idx " + std::to_string(padding_idx) + " is out of range for W of " +
             std::to_string(rows) + " rows (valid: [-" + std::to_string(rows) + ", " +
             std::to_string(rows) + "), or -1 for none)");
  return padding_idx < 0 ? rows + padding_idx : padding_idx;
}

/// Out's dims: Ids' followed by D (v2), Ids' but the last (1) followed by D (v1).
inline shape_t lookup_out_dims(shape_t ids, std::int64_t width, lookup_version version) {
  if (version == lookup_version::v1 && !ids.empty()) ids.pop_back();
  ids.push_back(width);
  return ids;
}

/// What both ops' kernels read: Ids (INT64 or INT32), W's V and D, and the padding row
/// (resolved: in [0, V), or no_padding).
struct lookup_geometry {
  const tensor& ids;
  std::int64_t rows, width;
  std::int64_t padding_row;
  lookup_version version;

  /// Out's dims (lookup_out_dims).
  shape_t out_dims() const { return lookup_out_dims(ids.shape(), width, version); }
};

/// lookup_table_v2's inputs: W read with `fp32_input` (checked [V, D]), Ids with `input`
/// (checked initialised, INT64 or INT32); padding_idx resolved.
struct lookup_front {
  const tensor& w;
  lookup_geometry g;
};
lookup_front lookup_front_of(const kernel_context& ctx, input_fn fp32_input, input_fn input);

/// lookup_table_v2_grad's inputs: lookup_front's checks (W is read for its dims only), and
/// Out@GRAD read with `fp32_input`, checked to have Out's dims (Ids' + [D]).
struct lookup_grad_front {
  const tensor& out_grad;
  lookup_geometry g;
  shape_t w_dims;
};
lookup_grad_front lookup_grad_front_of(const kernel_context& ctx, input_fn fp32_input,
                                       input_fn input);

} // namespace pe

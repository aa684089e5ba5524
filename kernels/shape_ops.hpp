#pragma once
// The shape ops (reshape2, flatten_contiguous_range, squeeze2, unsqueeze2, transpose2, concat,
// split, cast and their grads) on every kind of place: shared here is each op's front, the
// attributes read and checked, the inputs checked and the output dims computed, with the
// failure messages. A place's kernels only move the elements
// (kernels/cpu/shape_kernels.cpp: memcpy and loops; kernels/cuda/shape_kernels.cu:
// device copies and maps).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// Calls f(word{}) with the unsigned word type of `type`'s elements (4 or 8 bytes), which
/// transpose2 moves whatever the dtype; fails on other element sizes.
template <class F>
void visit_transpose_word(const kernel_context& ctx, dtype type, F f) {
  switch (size_of(type)) {
    case 4: f(std::uint32_t{}); break;
    case 8: f(std::uint64_t{}); break;
    default: ctx.fail("X has dtype " + to_string(type) + ", which transpose2 cannot move");
  }
}

/// A tensor cut along `axis` into parts (concat joins them, split cuts them): the whole's dims
/// and each part's `axis` dim. Per index over the axes before `axis` (`outer` of them), each
/// part is one contiguous block of sizes[i] * `row_bytes` bytes, the whole holding the blocks
/// interleaved in part order.
struct block_cut {
  shape_t whole;
  std::size_t axis;
  std::vector<std::int64_t> sizes;
  std::int64_t outer, row_bytes;
};

/// The cut of `whole` along `axis` into parts of dims `parts`, elements of `element_bytes`.
block_cut block_cut_of(const shape_t& whole, std::size_t axis, const std::vector<shape_t>& parts,
                       std::size_t element_bytes);

/// concat's X inputs (read with `input`), checked to share X[0]'s dtype, and the cut of Out;
/// refuses the AxisTensor input.
struct concat_plan {
  std::vector<const tensor*> xs;
  block_cut cut;
};
concat_plan concat_plan_of(const kernel_context& ctx, input_fn input);

/// concat's X inputs read with `input`, checked to share X[0]'s dtype.
std::vector<const tensor*> concat_inputs(const kernel_context& ctx, input_fn input);

/// The dims of `xs`.
std::vector<shape_t> dims_of(const std::vector<const tensor*>& xs);

/// concat_grad's axis, along which Out@GRAD (`dout`) is split into X@GRAD of dims `parts`
/// (X's), after checking dout has the joined dims.
std::size_t concat_grad_axis(const kernel_context& ctx, const tensor& dout,
                             const std::vector<shape_t>& parts);

/// split's X (read with `input`), its axis and its parts' dims from num or sections; refuses
/// the AxisTensor and SectionsTensorList inputs.
struct split_plan {
  const tensor& x;
  std::size_t axis;
  std::vector<shape_t> parts;
};
split_plan split_plan_of(const kernel_context& ctx, input_fn input);

/// Fails unless output `slot` binds one tensor per part.
void expect_split_outputs(const kernel_context& ctx, std::string_view slot, std::size_t parts);

/// cast's dtypes: in_dtype and out_dtype, checked to be castable and in_dtype to be X's.
struct cast_plan {
  dtype from, to;
};
cast_plan cast_plan_of(const kernel_context& ctx, const tensor& x);

/// What a place's shape kernels bring: how they read an input and move elements.
struct shape_moves {
  /// Reads X and Out@GRAD (checked as the place checks an input).
  input_fn input;
  /// Output `slot` = `in`'s elements in order, with `dims` (in's element count).
  void (*copy_as)(kernel_context& ctx, const tensor& in, std::string_view slot, const shape_t& dims);
  /// Gives `t` dtype `type` and `dims` on the place, its elements unspecified (XShape's).
  void (*resize)(const kernel_context& ctx, tensor& t, dtype type, const shape_t& dims);
  /// Output `slot` = `in` with its axes permuted by `perm` (out dim i is in dim perm[i]);
  /// visit_transpose_word moves the elements.
  void (*write_permuted)(kernel_context& ctx, const tensor& in, const std::vector<std::size_t>& perm,
                         std::string_view slot);
  /// Cuts `whole` along `axis` into output `slot`'s tensors of dims `parts`, after
  /// expect_split_outputs; an output may be `whole` itself.
  void (*write_split)(kernel_context& ctx, const tensor& whole, std::size_t axis,
                      const std::vector<shape_t>& parts, std::string_view slot);
  /// The kernels of concat (concat_plan_of), concat_grad (concat_grad_axis) and cast
  /// (cast_plan_of).
  kernel_fn concat, concat_grad, cast;
};

/// Registers the shape ops for places of kind `kind`, moving elements with `m`: assign,
/// reshape2, flatten_contiguous_range, squeeze2, unsqueeze2 (reshape2 refusing its Shape and
/// ShapeTensor inputs) and their grads (X's dims from XShape, checked to hold Out@GRAD's
/// elements), transpose2 and its grad (axis checked to permute X's axes; Out@GRAD checked to
/// be X transposed), split (num or sections; the AxisTensor and SectionsTensorList inputs
/// refused), concat, concat_grad and cast.
void register_shape_ops(kernel_registry& r, place::kind kind, const shape_moves& m);

} // namespace pe

// CPU kernels of the shape ops: assign, reshape2, flatten_contiguous_range, transpose2,
// squeeze2, unsqueeze2, concat, split, cast and the grads of the XShape ops and concat. Each
// copies its inputs, of any dtype, into buffers of the new dims (transpose2 permuting the
// elements on the way, concat and split joining and cutting blocks, cast converting them); the
// dims, attribute checks and failures come from the fronts of kernels/shape_ops.hpp, shared
// with the CUDA kernels.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/math_shapes.hpp"
#include "kernels/shape_ops.hpp"

namespace pe {

namespace {

/// Input `slot`[i], checked to be initialised (named with its index when i > 0).
const tensor& initialized_input(const kernel_context& ctx, std::string_view slot, std::size_t i = 0) {
  const tensor& t = ctx.input(slot, i);
  if (!t.initialized())
    ctx.fail("input " + std::string(slot) + (i > 0 ? "[" + std::to_string(i) + "]" : "") + " is uninitialised");
  return t;
}

/// Input `slot`[i], checked to be initialised and named with its index (concat's X).
const tensor& indexed_input(const kernel_context& ctx, std::string_view slot, std::size_t i) {
  const tensor& t = ctx.input(slot, i);
  if (!t.initialized()) ctx.fail("input " + std::string(slot) + "[" + std::to_string(i) + "] is uninitialised");
  return t;
}

/// Writes `in`'s elements, in order, to output `slot` with `dims` (same element count).
void copy_as(kernel_context& ctx, const tensor& in, std::string_view slot, const shape_t& dims) {
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    out.resize(in.type(), dims);
    std::memcpy(out.raw(), in.raw(), in.bytes());
  });
}

/// out = in with its axes permuted (out dim i is in dim perm[i]), for elements of type T. The
/// trailing axes the permutation leaves in place ([0, 2, 1, 3]'s last: attention's heads) are
/// contiguous in both tensors and copied as runs; an odometer walks the axes before them.
template <class T>
void permute_as(const tensor& in, const std::vector<std::size_t>& perm, tensor& out) {
  const std::size_t rank = perm.size();
  std::vector<std::int64_t> in_strides(rank, 1);
  for (std::size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in.dim(d);
  const shape_t dims = permuted(in.shape(), perm);
  std::size_t walked = rank; // the axes before the runs
  std::int64_t run = 1;
  while (walked > 0 && perm[walked - 1] == walked - 1) run *= dims[--walked];
  // Walk `out` in memory order, a run at a time; `from` is the matching offset in `in`.
  std::vector<std::int64_t> strides(walked), index(walked, 0);
  for (std::size_t i = 0; i < walked; ++i) strides[i] = in_strides[perm[i]];
  const T* src = static_cast<const T*>(in.raw());
  T* dst = static_cast<T*>(out.raw());
  std::int64_t from = 0;
  for (std::int64_t to = 0; to < out.numel(); to += run) {
    for (std::int64_t k = 0; k < run; ++k) dst[to + k] = src[from + k];
    for (std::size_t a = walked; a-- > 0;) { // odometer over out's index
      from += strides[a];
      if (++index[a] < dims[a]) break;
      from -= strides[a] * dims[a];
      index[a] = 0;
    }
  }
}

/// Output `slot` = `in` with its axes permuted by `perm`. Elements are moved as 4- or
/// 8-byte words, whatever their dtype.
void write_permuted(kernel_context& ctx, const tensor& in, const std::vector<std::size_t>& perm,
                    std::string_view slot) {
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    out.resize(in.type(), permuted(in.shape(), perm));
    visit_transpose_word(ctx, in.type(), [&](auto word) { permute_as<decltype(word)>(in, perm, out); });
  });
}

/// Walks the blocks of `cut`: calls copy(part, part_offset, whole_offset, bytes) per block,
/// offsets in bytes: concat gathers the blocks into the whole, split scatters them.
template <class Copy>
void for_each_block(const block_cut& cut, Copy copy) {
  std::int64_t whole_offset = 0;
  for (std::int64_t o = 0; o < cut.outer; ++o)
    for (std::size_t i = 0; i < cut.sizes.size(); ++i) {
      const std::int64_t bytes = cut.sizes[i] * cut.row_bytes;
      copy(i, o * bytes, whole_offset, bytes);
      whole_offset += bytes;
    }
}

/// Cuts `whole` along `axis` into output `slot`'s tensors of dims `parts` (their `axis` dims
/// summing to whole's). The parts are built aside, as an output may be the input.
void write_split(kernel_context& ctx, const tensor& whole, std::size_t axis,
                 const std::vector<shape_t>& parts, std::string_view slot) {
  expect_split_outputs(ctx, slot, parts.size());
  std::vector<tensor> outs;
  for (const shape_t& dims : parts) outs.emplace_back(whole.type(), dims);
  const auto* from = static_cast<const char*>(whole.raw());
  for_each_block(block_cut_of(whole.shape(), axis, parts, size_of(whole.type())),
                 [&](std::size_t i, std::int64_t part, std::int64_t at, std::int64_t bytes) {
                   std::memcpy(static_cast<char*>(outs[i].raw()) + part, from + at,
                               static_cast<std::size_t>(bytes));
                 });
  for (std::size_t i = 0; i < outs.size(); ++i) ctx.output(slot, i) = std::move(outs[i]);
}

/// Out = the X tensors joined along `axis`, built aside as Out may be one of them.
void concat(kernel_context& ctx) {
  const concat_plan p = concat_plan_of(ctx, indexed_input);
  tensor out(p.xs.front()->type(), p.cut.whole);
  auto* to = static_cast<char*>(out.raw());
  for_each_block(p.cut, [&](std::size_t i, std::int64_t part, std::int64_t at, std::int64_t bytes) {
    std::memcpy(to + at, static_cast<const char*>(p.xs[i]->raw()) + part, static_cast<std::size_t>(bytes));
  });
  ctx.output("Out") = std::move(out);
}

/// X@GRAD[i] = the block of Out@GRAD that X[i] filled: a split at X's dims.
void concat_grad(kernel_context& ctx) {
  const tensor& dout = initialized_input(ctx, "Out@GRAD");
  const std::vector<shape_t> parts = dims_of(concat_inputs(ctx, indexed_input));
  write_split(ctx, dout, concat_grad_axis(ctx, dout, parts), parts, "X@GRAD");
}

/// Out = X converted element by element to out_dtype, as static_cast does (to BOOL: nonzero).
void cast(kernel_context& ctx) {
  const tensor& x = initialized_input(ctx, "X");
  const cast_plan p = cast_plan_of(ctx, x);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    out.resize(p.to, x.shape());
    visit_element_type(p.from, [&](auto from_type) {
      using from = decltype(from_type);
      visit_element_type(p.to, [&](auto to_type) {
        using target = decltype(to_type);
        const from* src = x.data<from>();
        target* dst = out.data<target>();
        for (std::int64_t i = 0; i < x.numel(); ++i) dst[i] = static_cast<target>(src[i]);
      });
    });
  });
}

} // namespace

void register_shape_kernels(kernel_registry& r) {
  register_shape_ops(r, place::kind::cpu,
                     {initialized_input, copy_as,
                      [](const kernel_context&, tensor& t, dtype type, const shape_t& dims) { t.resize(type, dims); },
                      write_permuted, write_split, concat, concat_grad, cast});
}

} // namespace pe

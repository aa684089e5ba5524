// CPU kernels of the shape ops: assign, reshape2, flatten_contiguous_range, transpose2,
// squeeze2, unsqueeze2, concat, split, cast and the grads of the XShape ops and concat. Each
// copies its inputs, of any dtype, into buffers of the new dims (transpose2 permuting the
// elements on the way, concat and split joining and cutting blocks, cast converting them); the
// dims come from devices/math_shapes.hpp's rules, as in shape inference.
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "devices/cpu/cpu_kernels.hpp"
#include "devices/cpu/math_kernels.hpp"
#include "devices/math_shapes.hpp"

namespace pe {

namespace {

const tensor& initialized_input(const kernel_context& ctx, std::string_view slot) {
  const tensor& t = ctx.input(slot);
  if (!t.initialized()) ctx.fail("input " + std::string(slot) + " is uninitialised");
  return t;
}

/// Writes `in`'s elements, in order, to output `slot` with `dims` (same element count).
void copy_as(kernel_context& ctx, const tensor& in, std::string_view slot, const shape_t& dims) {
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    out.resize(in.type(), dims);
    std::memcpy(out.raw(), in.raw(), in.bytes());
  });
}

/// Gives XShape, when bound, the dims [0, X's dims]: no elements, X's dims for the grad op.
void write_xshape(kernel_context& ctx, const tensor& x) {
  if (ctx.has_output("XShape")) ctx.output("XShape").resize(x.type(), xshape_dims(x.shape()));
}

/// Registers an XShape op whose Out dims `out_dims` computes from X's dims and attributes.
void add_xshape_op(kernel_registry& r, const std::string& type,
                   std::function<shape_t(const kernel_context&, const shape_t&)> out_dims) {
  r.add(type, place::kind::cpu, [out_dims](kernel_context& ctx) {
    const tensor& x = initialized_input(ctx, "X");
    const shape_t dims = out_dims(ctx, x.shape());
    write_xshape(ctx, x);
    copy_as(ctx, x, "Out", dims);
  });
}

/// X@GRAD = Out@GRAD with the dims XShape records: the grad of every XShape op that keeps
/// the element order.
void reshape_grad(kernel_context& ctx) {
  const tensor& dout = initialized_input(ctx, "Out@GRAD");
  const shape_t x_dims = dims_of_xshape(ctx, ctx.input("XShape").shape());
  if (numel_of(x_dims) != dout.numel())
    ctx.fail("Out@GRAD " + to_string(dout.shape()) + " does not hold the elements of X " +
             to_string(x_dims) + " (from XShape)");
  copy_as(ctx, dout, "X@GRAD", x_dims);
}

const std::vector<std::int32_t>& ints(const kernel_context& ctx, const char* name) {
  return ctx.attrs().get<std::vector<std::int32_t>>(name);
}

/// out = in with its axes permuted (out dim i is in dim perm[i]), for elements of type T.
template <class T>
void permute_as(const tensor& in, const std::vector<std::size_t>& perm, tensor& out) {
  const std::size_t rank = perm.size();
  std::vector<std::int64_t> in_strides(rank, 1);
  for (std::size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in.dim(d);
  // Walk `out` in memory order; `from` is the matching offset in `in`.
  const shape_t dims = permuted(in.shape(), perm);
  std::vector<std::int64_t> strides(rank), index(rank, 0);
  for (std::size_t i = 0; i < rank; ++i) strides[i] = in_strides[perm[i]];
  const T* src = static_cast<const T*>(in.raw());
  T* dst = static_cast<T*>(out.raw());
  std::int64_t from = 0;
  for (std::int64_t to = 0; to < out.numel(); ++to) {
    dst[to] = src[from];
    for (std::size_t a = rank; a-- > 0;) { // odometer over out's index
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
    switch (size_of(in.type())) {
      case 4: permute_as<std::uint32_t>(in, perm, out); break;
      case 8: permute_as<std::uint64_t>(in, perm, out); break;
      default: ctx.fail("X has dtype " + to_string(in.type()) + ", which transpose2 cannot move");
    }
  });
}

void transpose2(kernel_context& ctx) {
  const tensor& x = initialized_input(ctx, "X");
  const auto perm = transpose_perm(ctx, x.rank(), ints(ctx, "axis"));
  write_xshape(ctx, x);
  write_permuted(ctx, x, perm, "Out");
}

/// X@GRAD = Out@GRAD permuted back by the inverse of `axis`.
void transpose2_grad(kernel_context& ctx) {
  const tensor& dout = initialized_input(ctx, "Out@GRAD");
  const shape_t x_dims = dims_of_xshape(ctx, ctx.input("XShape").shape());
  const auto perm = transpose_perm(ctx, x_dims.size(), ints(ctx, "axis"));
  if (dout.shape() != permuted(x_dims, perm))
    ctx.fail("Out@GRAD has dims " + to_string(dout.shape()) + ", expected " +
             to_string(permuted(x_dims, perm)) + " (X " + to_string(x_dims) +
             " from XShape, transposed)");
  std::vector<std::size_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = i;
  write_permuted(ctx, dout, inverse, "X@GRAD");
}

/// Walks a `whole` tensor cut along `axis` into parts whose `axis` dims are `sizes`: each
/// part is, per index over the axes before `axis`, one contiguous block, and the whole holds
/// those blocks interleaved in part order. Calls copy(part, part_offset, whole_offset, bytes)
/// per block, offsets in bytes: concat gathers the blocks into the whole, split scatters them.
template <class Copy>
void for_each_block(const shape_t& whole, std::size_t axis, const std::vector<std::int64_t>& sizes,
                    std::size_t element_bytes, Copy copy) {
  const std::int64_t outer = numel_of(shape_t(whole.begin(), whole.begin() + axis));
  const auto row_bytes = static_cast<std::int64_t>(element_bytes) *
                         numel_of(shape_t(whole.begin() + axis + 1, whole.end()));
  std::int64_t whole_offset = 0;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::int64_t bytes = sizes[i] * row_bytes;
      copy(i, o * bytes, whole_offset, bytes);
      whole_offset += bytes;
    }
}

/// Cuts `whole` along `axis` into output `slot`'s tensors of dims `parts` (their `axis` dims
/// summing to whole's). The parts are built aside, as an output may be the input.
void write_split(kernel_context& ctx, const tensor& whole, std::size_t axis,
                 const std::vector<shape_t>& parts, std::string_view slot) {
  if (ctx.output_count(slot) != parts.size())
    ctx.fail(std::string(slot) + " binds " + std::to_string(ctx.output_count(slot)) +
             " tensors for " + std::to_string(parts.size()) + " parts");
  std::vector<tensor> outs;
  std::vector<std::int64_t> sizes;
  for (const shape_t& dims : parts) {
    outs.emplace_back(whole.type(), dims);
    sizes.push_back(dims[axis]);
  }
  const auto* from = static_cast<const char*>(whole.raw());
  for_each_block(whole.shape(), axis, sizes, size_of(whole.type()),
                 [&](std::size_t i, std::int64_t part, std::int64_t at, std::int64_t bytes) {
                   std::memcpy(static_cast<char*>(outs[i].raw()) + part, from + at,
                               static_cast<std::size_t>(bytes));
                 });
  for (std::size_t i = 0; i < outs.size(); ++i) ctx.output(slot, i) = std::move(outs[i]);
}

std::int32_t axis_attr(const kernel_context& ctx) { return ctx.attrs().get<std::int32_t>("axis"); }

/// The X inputs of concat and concat_grad, checked to be initialised and of X[0]'s dtype.
std::vector<const tensor*> concat_inputs(const kernel_context& ctx) {
  std::vector<const tensor*> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) {
    const tensor& x = ctx.input("X", i);
    if (!x.initialized()) ctx.fail("input X[" + std::to_string(i) + "] is uninitialised");
    if (x.type() != ctx.input("X").type())
      ctx.fail("X[" + std::to_string(i) + "] is " + to_string(x.type()) + ", but X[0] is " +
               to_string(ctx.input("X").type()));
    xs.push_back(&x);
  }
  return xs;
}

std::vector<shape_t> dims_of(const std::vector<const tensor*>& xs) {
  std::vector<shape_t> dims;
  for (const tensor* x : xs) dims.push_back(x->shape());
  return dims;
}

/// Out = the X tensors joined along `axis`, built aside as Out may be one of them.
void concat(kernel_context& ctx) {
  if (ctx.has_input("AxisTensor"))
    ctx.fail("the AxisTensor input is not supported; give the axis attribute");
  const std::vector<const tensor*> xs = concat_inputs(ctx);
  const shape_t dims = concat_dims(ctx, dims_of(xs), axis_attr(ctx));
  const std::size_t axis = normalize_axis(ctx, "axis", axis_attr(ctx), dims.size());
  std::vector<std::int64_t> sizes;
  for (const tensor* x : xs) sizes.push_back(x->dim(axis));
  tensor out(xs.front()->type(), dims);
  auto* to = static_cast<char*>(out.raw());
  for_each_block(dims, axis, sizes, size_of(out.type()),
                 [&](std::size_t i, std::int64_t part, std::int64_t at, std::int64_t bytes) {
                   std::memcpy(to + at, static_cast<const char*>(xs[i]->raw()) + part,
                               static_cast<std::size_t>(bytes));
                 });
  ctx.output("Out") = std::move(out);
}

/// X@GRAD[i] = the block of Out@GRAD that X[i] filled: a split at X's dims.
void concat_grad(kernel_context& ctx) {
  const tensor& dout = initialized_input(ctx, "Out@GRAD");
  const std::vector<shape_t> parts = dims_of(concat_inputs(ctx));
  const shape_t dims = concat_dims(ctx, parts, axis_attr(ctx));
  if (dout.shape() != dims)
    ctx.fail("Out@GRAD has dims " + to_string(dout.shape()) + ", expected " + to_string(dims));
  write_split(ctx, dout, normalize_axis(ctx, "axis", axis_attr(ctx), dims.size()), parts,
              "X@GRAD");
}

void split(kernel_context& ctx) {
  if (ctx.has_input("AxisTensor") || ctx.has_input("SectionsTensorList"))
    ctx.fail("the AxisTensor and SectionsTensorList inputs are not supported; give the axis "
             "and num or sections attributes");
  const tensor& x = initialized_input(ctx, "X");
  const std::vector<shape_t> parts = split_dims(
      ctx, x.shape(), axis_attr(ctx), ctx.attrs().get<std::int32_t>("num"), ints(ctx, "sections"));
  write_split(ctx, x, normalize_axis(ctx, "axis", axis_attr(ctx), x.rank()), parts, "Out");
}

/// cast's in_dtype or out_dtype attribute, checked to name a dtype with a C++ element type.
dtype cast_dtype(const kernel_context& ctx, const char* name) {
  const auto type = static_cast<dtype>(ctx.attrs().get<std::int32_t>(name));
  if (!visit_element_type(type, [](auto) {}))
    ctx.fail(std::string(name) + " " + to_string(type) +
             " is not castable; cast converts BOOL, UINT8, INT32, INT64, FP32 and FP64");
  return type;
}

/// Out = X converted element by element to out_dtype, as static_cast does (to BOOL: nonzero).
void cast(kernel_context& ctx) {
  const tensor& x = initialized_input(ctx, "X");
  const dtype in = cast_dtype(ctx, "in_dtype");
  const dtype to = cast_dtype(ctx, "out_dtype");
  if (x.type() != in)
    ctx.fail("X is " + to_string(x.type()) + ", but in_dtype is " + to_string(in));
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    out.resize(to, x.shape());
    visit_element_type(in, [&](auto from_type) {
      using from = decltype(from_type);
      visit_element_type(to, [&](auto to_type) {
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
  r.add("assign", place::kind::cpu, [](kernel_context& ctx) {
    const tensor& x = initialized_input(ctx, "X");
    copy_as(ctx, x, "Out", x.shape());
  });
  add_xshape_op(r, "reshape2", [](const kernel_context& ctx, const shape_t& x) {
    if (ctx.has_input("Shape") || ctx.has_input("ShapeTensor"))
      ctx.fail("the Shape and ShapeTensor inputs are not supported; give the shape attribute");
    return reshape_dims(ctx, x, ints(ctx, "shape"));
  });
  add_xshape_op(r, "flatten_contiguous_range", [](const kernel_context& ctx, const shape_t& x) {
    return flatten_dims(ctx, x, ctx.attrs().get<std::int32_t>("start_axis"),
                        ctx.attrs().get<std::int32_t>("stop_axis"));
  });
  add_xshape_op(r, "squeeze2", [](const kernel_context& ctx, const shape_t& x) {
    return squeeze_dims(ctx, x, ints(ctx, "axes"));
  });
  add_xshape_op(r, "unsqueeze2", [](const kernel_context& ctx, const shape_t& x) {
    return unsqueeze_dims(ctx, x, ints(ctx, "axes"));
  });
  for (const char* type : {"reshape2", "flatten_contiguous_range", "squeeze2", "unsqueeze2"})
    r.add(std::string(type) + "_grad", place::kind::cpu, reshape_grad);
  r.add("transpose2", place::kind::cpu, transpose2);
  r.add("transpose2_grad", place::kind::cpu, transpose2_grad);
  r.add("concat", place::kind::cpu, concat);
  r.add("concat_grad", place::kind::cpu, concat_grad);
  r.add("split", place::kind::cpu, split);
  r.add("cast", place::kind::cpu, cast);
}

} // namespace pe

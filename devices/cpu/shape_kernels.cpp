// CPU kernels of the shape ops: assign, reshape2, flatten_contiguous_range, transpose2,
// squeeze2, unsqueeze2 and the grads of the XShape ops. Each copies its input, of any dtype,
// into a buffer of the new dims (transpose2 permuting the elements on the way); the dims come
// from devices/math_shapes.hpp's rules, as in shape inference.
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
}

} // namespace pe

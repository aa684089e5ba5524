// CUDA kernels of the shape ops: assign, reshape2, flatten_contiguous_range, squeeze2,
// unsqueeze2 (device copies into the new dims), transpose2 (permute_index.hpp's gather),
// concat and split (one strided 2-D copy per part), cast (cast_fn per element pair of types)
// and the grads. The dims come from devices/math_shapes.hpp's rules, as on the CPU.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "devices/cuda/kernels/cuda_kernel_groups.hpp"
#include "devices/cuda/kernels/elementwise_functors.hpp"
#include "devices/cuda/kernels/gpu_maps.cuh"
#include "devices/cuda/kernels/permute_index.hpp"
#include "devices/math_shapes.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

/// Writes `in`'s elements, in order, to output `slot` with `dims` (same element count).
void copy_as(kernel_context& ctx, const tensor& in, std::string_view slot, const shape_t& dims) {
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    resize_output(ctx, out, in.type(), dims);
    copy_on_device(ctx, out.raw(), in.raw(), in.bytes());
  });
}

/// XShape, when bound: the dims [0, X's dims] and no elements.
void write_xshape(kernel_context& ctx, const tensor& x) {
  if (ctx.has_output("XShape")) resize_output(ctx, ctx.output("XShape"), x.type(), xshape_dims(x.shape()));
}

void add_xshape_op(kernel_registry& r, const std::string& type,
                   std::function<shape_t(const kernel_context&, const shape_t&)> out_dims) {
  r.add(type, gpu, [out_dims](kernel_context& ctx) {
    const tensor& x = gpu_input(ctx, "X");
    const shape_t dims = out_dims(ctx, x.shape());
    write_xshape(ctx, x);
    copy_as(ctx, x, "Out", dims);
  });
}

void reshape_grad(kernel_context& ctx) {
  const tensor& dout = gpu_input(ctx, "Out@GRAD");
  const shape_t x_dims = dims_of_xshape(ctx, ctx.input("XShape").shape());
  if (numel_of(x_dims) != dout.numel())
    ctx.fail("Out@GRAD " + to_string(dout.shape()) + " does not hold the elements of X " +
             to_string(x_dims) + " (from XShape)");
  copy_as(ctx, dout, "X@GRAD", x_dims);
}

const std::vector<std::int32_t>& ints(const kernel_context& ctx, const char* name) {
  return ctx.attrs().get<std::vector<std::int32_t>>(name);
}

void write_permuted(kernel_context& ctx, const tensor& in, const std::vector<std::size_t>& perm,
                    std::string_view slot) {
  permute_geometry g;
  try {
    g = permute_geometry::make(in.shape(), perm);
  } catch (const error& e) {
    ctx.fail(e.what());
  }
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    resize_output(ctx, out, in.type(), permuted(in.shape(), perm));
    switch (size_of(in.type())) {
      case 4:
        for_each(ctx, in.numel(),
                 permute_map<std::uint32_t>{static_cast<const std::uint32_t*>(in.raw()),
                                            static_cast<std::uint32_t*>(out.raw()), g});
        break;
      case 8:
        for_each(ctx, in.numel(),
                 permute_map<std::uint64_t>{static_cast<const std::uint64_t*>(in.raw()),
                                            static_cast<std::uint64_t*>(out.raw()), g});
        break;
      default: ctx.fail("X has dtype " + to_string(in.type()) + ", which transpose2 cannot move");
    }
  });
}

void transpose2(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  const auto perm = transpose_perm(ctx, x.rank(), ints(ctx, "axis"));
  write_xshape(ctx, x);
  write_permuted(ctx, x, perm, "Out");
}

void transpose2_grad(kernel_context& ctx) {
  const tensor& dout = gpu_input(ctx, "Out@GRAD");
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

/// Copies between a `whole` tensor cut along `axis` and its parts (`axis` dims `sizes`): part
/// i is `outer` blocks of sizes[i] * row bytes, `whole_pitch` apart in the whole. One
/// cudaMemcpy2DAsync per part; `gather` copies parts into the whole (concat), else out of it.
void copy_blocks(const kernel_context& ctx, const shape_t& whole, std::size_t axis,
                 const std::vector<std::int64_t>& sizes, std::size_t element_bytes,
                 char* whole_data, const std::vector<char*>& parts, bool gather) {
  const std::int64_t outer = numel_of(shape_t(whole.begin(), whole.begin() + axis));
  const auto row_bytes = static_cast<std::int64_t>(element_bytes) *
                         numel_of(shape_t(whole.begin() + axis + 1, whole.end()));
  const std::size_t pitch = static_cast<std::size_t>(whole[axis] * row_bytes);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto width = static_cast<std::size_t>(sizes[i] * row_bytes);
    if (width > 0 && outer > 0) {
      char* at = whole_data + offset;
      check(ctx,
            gather ? cudaMemcpy2DAsync(at, pitch, parts[i], width, width,
                                       static_cast<std::size_t>(outer), cudaMemcpyDeviceToDevice,
                                       cuda_stream_of(ctx))
                   : cudaMemcpy2DAsync(parts[i], width, at, pitch, width,
                                       static_cast<std::size_t>(outer), cudaMemcpyDeviceToDevice,
                                       cuda_stream_of(ctx)),
            "cudaMemcpy2DAsync");
    }
    offset += static_cast<std::int64_t>(width);
  }
}

void write_split(kernel_context& ctx, const tensor& whole, std::size_t axis,
                 const std::vector<shape_t>& parts, std::string_view slot) {
  if (ctx.output_count(slot) != parts.size())
    ctx.fail(std::string(slot) + " binds " + std::to_string(ctx.output_count(slot)) +
             " tensors for " + std::to_string(parts.size()) + " parts");
  std::vector<tensor> outs;
  std::vector<std::int64_t> sizes;
  std::vector<char*> data;
  for (const shape_t& dims : parts) {
    outs.push_back(scratch(ctx, whole.type(), dims));
    sizes.push_back(dims[axis]);
    data.push_back(static_cast<char*>(outs.back().raw()));
  }
  copy_blocks(ctx, whole.shape(), axis, sizes, size_of(whole.type()),
              const_cast<char*>(static_cast<const char*>(whole.raw())), data, false);
  for (std::size_t i = 0; i < outs.size(); ++i) ctx.output(slot, i) = std::move(outs[i]);
}

std::int32_t axis_attr(const kernel_context& ctx) { return ctx.attrs().get<std::int32_t>("axis"); }

std::vector<const tensor*> concat_inputs(const kernel_context& ctx) {
  std::vector<const tensor*> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) {
    const tensor& x = gpu_input(ctx, "X", i);
    if (x.type() != ctx.input("X").type())
      ctx.fail("X[" + std::to_string(i) + "] is " + to_string(x.type()) + ", but X[0] is " +
               to_string(ctx.input("X").type()));
    xs.push_back(&x);
  }
  return xs;
}

/// Input dims, for concat_grad: X is read for its dims only there (it may hold no data yet
/// on this place, as on the CPU's kernel it is not read either).
std::vector<shape_t> dims_of(const kernel_context& ctx) {
  std::vector<shape_t> dims;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) dims.push_back(ctx.input("X", i).shape());
  return dims;
}

void concat(kernel_context& ctx) {
  if (ctx.has_input("AxisTensor"))
    ctx.fail("the AxisTensor input is not supported; give the axis attribute");
  const std::vector<const tensor*> xs = concat_inputs(ctx);
  const shape_t dims = concat_dims(ctx, dims_of(ctx), axis_attr(ctx));
  const std::size_t axis = normalize_axis(ctx, "axis", axis_attr(ctx), dims.size());
  std::vector<std::int64_t> sizes;
  std::vector<char*> data;
  for (const tensor* x : xs) {
    sizes.push_back(x->dim(axis));
    data.push_back(const_cast<char*>(static_cast<const char*>(x->raw())));
  }
  tensor out = scratch(ctx, xs.front()->type(), dims);
  copy_blocks(ctx, dims, axis, sizes, size_of(out.type()), static_cast<char*>(out.raw()), data,
              true);
  ctx.output("Out") = std::move(out);
}

void concat_grad(kernel_context& ctx) {
  const tensor& dout = gpu_input(ctx, "Out@GRAD");
  const std::vector<shape_t> parts = dims_of(ctx);
  const shape_t dims = concat_dims(ctx, parts, axis_attr(ctx));
  if (dout.shape() != dims)
    ctx.fail("Out@GRAD has dims " + to_string(dout.shape()) + ", expected " + to_string(dims));
  write_split(ctx, dout, normalize_axis(ctx, "axis", axis_attr(ctx), dims.size()), parts, "X@GRAD");
}

void split(kernel_context& ctx) {
  if (ctx.has_input("AxisTensor") || ctx.has_input("SectionsTensorList"))
    ctx.fail("the AxisTensor and SectionsTensorList inputs are not supported; give the axis "
             "and num or sections attributes");
  const tensor& x = gpu_input(ctx, "X");
  const std::vector<shape_t> parts = split_dims(
      ctx, x.shape(), axis_attr(ctx), ctx.attrs().get<std::int32_t>("num"), ints(ctx, "sections"));
  write_split(ctx, x, normalize_axis(ctx, "axis", axis_attr(ctx), x.rank()), parts, "Out");
}

dtype cast_dtype(const kernel_context& ctx, const char* name) {
  const auto type = static_cast<dtype>(ctx.attrs().get<std::int32_t>(name));
  if (!visit_element_type(type, [](auto) {}))
    ctx.fail(std::string(name) + " " + to_string(type) +
             " is not castable; cast converts BOOL, UINT8, INT32, INT64, FP32 and FP64");
  return type;
}

void cast(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  const dtype in = cast_dtype(ctx, "in_dtype");
  const dtype to = cast_dtype(ctx, "out_dtype");
  if (x.type() != in) ctx.fail("X is " + to_string(x.type()) + ", but in_dtype is " + to_string(in));
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    resize_output(ctx, out, to, x.shape());
    visit_element_type(in, [&](auto from_type) {
      using from = decltype(from_type);
      visit_element_type(to, [&](auto to_type) {
        using target = decltype(to_type);
        for_each(ctx, x.numel(),
                 unary_map<cast_fn<target>, from, target>{x.data<from>(), out.data<target>(), {}});
      });
    });
  });
}

} // namespace

void register_shape_kernels(kernel_registry& r) {
  r.add("assign", gpu, [](kernel_context& ctx) {
    const tensor& x = gpu_input(ctx, "X");
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
    r.add(std::string(type) + "_grad", gpu, reshape_grad);
  r.add("transpose2", gpu, transpose2);
  r.add("transpose2_grad", gpu, transpose2_grad);
  r.add("concat", gpu, concat);
  r.add("concat_grad", gpu, concat_grad);
  r.add("split", gpu, split);
  r.add("cast", gpu, cast);
}

} // namespace pe::cuda

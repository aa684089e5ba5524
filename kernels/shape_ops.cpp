#include "kernels/shape_ops.hpp"

#include "kernels/math_shapes.hpp"

namespace pe {

namespace {

const std::vector<std::int32_t>& ints(const kernel_context& ctx, const char* name) {
  return ctx.attrs().get<std::vector<std::int32_t>>(name);
}

std::int32_t axis_attr(const kernel_context& ctx) { return ctx.attrs().get<std::int32_t>("axis"); }

/// cast's in_dtype or out_dtype attribute, checked to name a dtype with a C++ element type.
dtype cast_dtype(const kernel_context& ctx, const char* name) {
  const auto type = static_cast<dtype>(ctx.attrs().get<std::int32_t>(name));
  if (!visit_element_type(type, [](auto) {}))
    ctx.fail(std::string(name) + " " + to_string(type) +
             " is not castable; cast converts BOOL, UINT8, INT32, INT64, FP32 and FP64");
  return type;
}

} // namespace

block_cut block_cut_of(const shape_t& whole, std::size_t axis, const std::vector<shape_t>& parts,
                       std::size_t element_bytes) {
  block_cut cut{whole, axis, {}, numel_of(shape_t(whole.begin(), whole.begin() + axis)),
                static_cast<std::int64_t>(element_bytes) *
                    numel_of(shape_t(whole.begin() + axis + 1, whole.end()))};
  for (const shape_t& dims : parts) cut.sizes.push_back(dims[axis]);
  return cut;
}

std::vector<const tensor*> concat_inputs(const kernel_context& ctx, input_fn input) {
  std::vector<const tensor*> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) {
    const tensor& x = input(ctx, "X", i);
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

concat_plan concat_plan_of(const kernel_context& ctx, input_fn input) {
  if (ctx.has_input("AxisTensor"))
    ctx.fail("the AxisTensor input is not supported; give the axis attribute");
  std::vector<const tensor*> xs = concat_inputs(ctx, input);
  const std::vector<shape_t> parts = dims_of(xs);
  const shape_t dims = concat_dims(ctx, parts, axis_attr(ctx));
  const std::size_t axis = normalize_axis(ctx, "axis", axis_attr(ctx), dims.size());
  const std::size_t element_bytes = size_of(xs.front()->type());
  return {std::move(xs), block_cut_of(dims, axis, parts, element_bytes)};
}

std::size_t concat_grad_axis(const kernel_context& ctx, const tensor& dout,
                             const std::vector<shape_t>& parts) {
  const shape_t dims = concat_dims(ctx, parts, axis_attr(ctx));
  if (dout.shape() != dims)
    ctx.fail("Out@GRAD has dims " + to_string(dout.shape()) + ", expected " + to_string(dims));
  return normalize_axis(ctx, "axis", axis_attr(ctx), dims.size());
}

split_plan split_plan_of(const kernel_context& ctx, input_fn input) {
  if (ctx.has_input("AxisTensor") || ctx.has_input("SectionsTensorList"))
    ctx.fail("the AxisTensor and SectionsTensorList inputs are not supported; give the axis "
             "and num or sections attributes");
  const tensor& x = input(ctx, "X", 0);
  std::vector<shape_t> parts = split_dims(ctx, x.shape(), axis_attr(ctx), ctx.attrs().get<std::int32_t>("num"),
                                          ints(ctx, "sections"), ctx.output_count("Out"));
  return {x, normalize_axis(ctx, "axis", axis_attr(ctx), x.rank()), std::move(parts)};
}

void expect_split_outputs(const kernel_context& ctx, std::string_view slot, std::size_t parts) {
  if (ctx.output_count(slot) != parts)
    ctx.fail(std::string(slot) + " binds " + std::to_string(ctx.output_count(slot)) +
             " tensors for " + std::to_string(parts) + " parts");
}

cast_plan cast_plan_of(const kernel_context& ctx, const tensor& x) {
  const dtype in = cast_dtype(ctx, "in_dtype");
  const dtype to = cast_dtype(ctx, "out_dtype");
  if (x.type() != in) ctx.fail("X is " + to_string(x.type()) + ", but in_dtype is " + to_string(in));
  return {in, to};
}

namespace {

/// Gives XShape, when bound, the dims [0, X's dims]: no elements, X's dims for the grad op.
void write_xshape(kernel_context& ctx, const shape_moves& m, const tensor& x) {
  if (ctx.has_output("XShape")) m.resize(ctx, ctx.output("XShape"), x.type(), xshape_dims(x.shape()));
}

/// An XShape op's Out dims from X's dims and the op's attributes.
using xshape_rule = shape_t (*)(const kernel_context& ctx, const shape_t& x);

/// The XShape ops that keep the element order, each with its rule.
const std::vector<std::pair<std::string, xshape_rule>>& xshape_ops() {
  static const std::vector<std::pair<std::string, xshape_rule>> ops{
      {"reshape2",
       [](const kernel_context& ctx, const shape_t& x) {
         if (ctx.has_input("Shape") || ctx.has_input("ShapeTensor"))
           ctx.fail("the Shape and ShapeTensor inputs are not supported; give the shape attribute");
         return reshape_dims(ctx, x, ints(ctx, "shape"));
       }},
      {"flatten_contiguous_range",
       [](const kernel_context& ctx, const shape_t& x) {
         return flatten_dims(ctx, x, ctx.attrs().get<std::int32_t>("start_axis"),
                             ctx.attrs().get<std::int32_t>("stop_axis"));
       }},
      {"squeeze2", [](const kernel_context& ctx, const shape_t& x) { return squeeze_dims(ctx, x, ints(ctx, "axes")); }},
      {"unsqueeze2",
       [](const kernel_context& ctx, const shape_t& x) { return unsqueeze_dims(ctx, x, ints(ctx, "axes")); }},
  };
  return ops;
}

/// X's dims for the grad of an order-keeping XShape op: XShape's record, checked to hold
/// Out@GRAD's (`dout`) element count.
shape_t reshape_grad_dims(const kernel_context& ctx, const tensor& dout) {
  shape_t x_dims = dims_of_xshape(ctx, ctx.input("XShape").shape());
  if (numel_of(x_dims) != dout.numel())
    ctx.fail("Out@GRAD " + to_string(dout.shape()) + " does not hold the elements of X " +
             to_string(x_dims) + " (from XShape)");
  return x_dims;
}

/// transpose2's permutation of a rank-`rank` X: its axis attribute, checked.
std::vector<std::size_t> transpose2_perm(const kernel_context& ctx, std::size_t rank) {
  return transpose_perm(ctx, rank, ints(ctx, "axis"));
}

/// The inverse of transpose2's permutation, after checking Out@GRAD (`dout`) has X's dims
/// (from XShape) transposed.
std::vector<std::size_t> transpose2_grad_perm(const kernel_context& ctx, const tensor& dout) {
  const shape_t x_dims = dims_of_xshape(ctx, ctx.input("XShape").shape());
  const auto perm = transpose2_perm(ctx, x_dims.size());
  if (dout.shape() != permuted(x_dims, perm))
    ctx.fail("Out@GRAD has dims " + to_string(dout.shape()) + ", expected " +
             to_string(permuted(x_dims, perm)) + " (X " + to_string(x_dims) +
             " from XShape, transposed)");
  std::vector<std::size_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = i;
  return inverse;
}

} // namespace

void register_shape_ops(kernel_registry& r, place::kind kind, const shape_moves& m) {
  r.add("assign", kind, [m](kernel_context& ctx) {
    const tensor& x = m.input(ctx, "X", 0);
    m.copy_as(ctx, x, "Out", x.shape());
  });
  for (const auto& [type, rule] : xshape_ops()) {
    r.add(type, kind, [m, rule = rule](kernel_context& ctx) {
      const tensor& x = m.input(ctx, "X", 0);
      const shape_t dims = rule(ctx, x.shape());
      write_xshape(ctx, m, x);
      m.copy_as(ctx, x, "Out", dims);
    });
    // X@GRAD = Out@GRAD with the dims XShape records.
    r.add(type + "_grad", kind, [m](kernel_context& ctx) {
      const tensor& dout = m.input(ctx, "Out@GRAD", 0);
      m.copy_as(ctx, dout, "X@GRAD", reshape_grad_dims(ctx, dout));
    });
  }
  r.add("transpose2", kind, [m](kernel_context& ctx) {
    const tensor& x = m.input(ctx, "X", 0);
    const auto perm = transpose2_perm(ctx, x.rank());
    write_xshape(ctx, m, x);
    m.write_permuted(ctx, x, perm, "Out");
  });
  // X@GRAD = Out@GRAD permuted back by the inverse of axis.
  r.add("transpose2_grad", kind, [m](kernel_context& ctx) {
    const tensor& dout = m.input(ctx, "Out@GRAD", 0);
    m.write_permuted(ctx, dout, transpose2_grad_perm(ctx, dout), "X@GRAD");
  });
  r.add("concat", kind, m.concat);
  r.add("concat_grad", kind, m.concat_grad);
  r.add("split", kind, [m](kernel_context& ctx) {
    const split_plan p = split_plan_of(ctx, m.input);
    m.write_split(ctx, p.x, p.axis, p.parts, "Out");
  });
  r.add("cast", kind, m.cast);
}

} // namespace pe

// Schemas of the math ops: mul, matmul_v2, matmul, relu, tanh, sigmoid, scale, sum, mean,
// reduce_mean, reduce_sum, and the grad ops of those that have one. The shape rules are
// kernels/math_shapes.hpp's, the same the CPU kernels apply; every math op computes in FP32.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/attributes.hpp"
#include "graph/ops/op_helpers.hpp"
#include "kernels/math_shapes.hpp"

namespace pe {

namespace {

/// A `scale` op computing out = s * in, carrying `forward`'s attributes (op_role, ...):
/// what Paddle's grad makers of scale and sum emit.
proto::OpDesc scale_op(const proto::OpDesc& forward, const std::string& in, const std::string& out,
                       float s) {
  proto::OpDesc op;
  op.set_type("scale");
  set_input(op, "X", {in});
  set_output(op, "Out", {out});
  *op.mutable_attrs() = forward.attrs();
  set_attr(op, "scale", s);
  set_attr(op, "bias", 0.f);
  set_attr(op, "bias_after_scale", true);
  return op;
}

// --- shape inference -------------------------------------------------------------------

void infer_mul_op(shape_context& ctx) {
  const attribute_map& a = ctx.attrs();
  const mul_dims d =
      infer_mul(ctx, fp32_dims(ctx, "X"), fp32_dims(ctx, "Y"),
                a.get<std::int32_t>("x_num_col_dims"), a.get<std::int32_t>("y_num_col_dims"));
  ctx.set_outputs("Out", d.out, dtype::fp32);
}

/// Shape inference of matmul_v2 (attributes trans_x, trans_y) and matmul (transpose_X,
/// transpose_Y): one rule, the attributes named differently.
shape_fn infer_matmul_op(std::string trans_x, std::string trans_y) {
  return [trans_x = std::move(trans_x), trans_y = std::move(trans_y)](shape_context& ctx) {
    const attribute_map& a = ctx.attrs();
    const matmul_dims d = infer_matmul(ctx, fp32_dims(ctx, "X"), fp32_dims(ctx, "Y"),
                                       a.get<bool>(trans_x), a.get<bool>(trans_y));
    ctx.set_outputs("Out", d.out, dtype::fp32);
  };
}

void infer_sum(shape_context& ctx) {
  const std::size_t count = ctx.input_count("X");
  ctx.expect(count > 0, "X binds no variables");
  const shape_t& first = fp32_dims(ctx, "X");
  for (std::size_t i = 1; i < count; ++i) {
    const shape_t& dims = fp32_dims(ctx, "X", i);
    ctx.expect(dims_compatible(dims, first), "X[" + std::to_string(i) + "] dims " +
                                                 to_string(dims) + " differ from X[0] dims " +
                                                 to_string(first));
  }
  ctx.set_outputs("Out", first, dtype::fp32);
}

void infer_mean(shape_context& ctx) {
  fp32_dims(ctx, "X");
  ctx.set_outputs("Out", {1}, dtype::fp32);
}

/// reduce_mean (dim as INTS) and reduce_sum (dim as LONGS): Out's dims from dim, keep_dim
/// and reduce_all.
template <class Int>
void infer_reduce(shape_context& ctx) {
  const attribute_map& a = ctx.attrs();
  const shape_t& x = fp32_dims(ctx, "X");
  const std::vector<bool> reduced =
      reduced_axes(ctx, x.size(), a.get<std::vector<Int>>("dim"), a.get<bool>("reduce_all"));
  ctx.set_outputs("Out", reduced_dims(x, reduced, a.get<bool>("keep_dim")), dtype::fp32);
}

/// reduce_sum also carries in_dtype and out_dtype, which must leave the sum in FP32.
void infer_reduce_sum(shape_context& ctx) {
  const attribute_map& a = ctx.attrs();
  expect_fp32_reduce_dtypes(ctx, a.get<std::int32_t>("in_dtype"), a.get<std::int32_t>("out_dtype"));
  infer_reduce<std::int64_t>(ctx);
}

// --- grad makers -----------------------------------------------------------------------

/// Each X[i]@GRAD of sum is Out@GRAD: one scale-by-1 op per input, as Paddle emits.
std::vector<proto::OpDesc> sum_grad(const proto::OpDesc& fwd) {
  const std::string dout = grad_name(output_args(fwd, "Out").at(0));
  std::vector<proto::OpDesc> ops;
  for (const auto& x : input_args(fwd, "X")) ops.push_back(scale_op(fwd, dout, grad_name(x), 1.f));
  return ops;
}

// --- the groups ------------------------------------------------------------------------

void add_gemm_ops(op_registry& r) {
  const default_grad grad{.forward_inputs = {"X", "Y"},
                          .forward_outputs = {},
                          .output_grads = {"Out"},
                          .input_grads = {"X", "Y"}};
  const shape_fn infer_grad = dims_from({{"X", "X@GRAD"}, {"Y", "Y@GRAD"}});
  add_with_grad(
      r,
      {.type = "mul",
       .inputs = {{"X"}, {"Y"}},
       .outputs = {{"Out"}},
       .attrs = {{"x_num_col_dims", std::int32_t{1}}, {"y_num_col_dims", std::int32_t{1}}},
       .infer_shape = infer_mul_op,
       .make_grad = {}},
      grad, infer_grad);
  add_with_grad(r,
                {.type = "matmul_v2",
                 .inputs = {{"X"}, {"Y"}},
                 .outputs = {{"Out"}},
                 .attrs = {{"trans_x", false}, {"trans_y", false}},
                 .infer_shape = infer_matmul_op("trans_x", "trans_y"),
                 .make_grad = {}},
                grad, infer_grad);
  // matmul (v1): matmul_v2's rule with Out scaled by alpha.
  add_with_grad(r,
                {.type = "matmul",
                 .inputs = {{"X"}, {"Y"}},
                 .outputs = {{"Out"}},
                 .attrs = {{"transpose_X", false}, {"transpose_Y", false}, {"alpha", 1.f}},
                 .infer_shape = infer_matmul_op("transpose_X", "transpose_Y"),
                 .make_grad = {}},
                grad, infer_grad);
}

void add_unary_ops(op_registry& r) {
  // As in Paddle, the activations' grads read Out, not X.
  for (const char* type : {"relu", "tanh", "sigmoid"})
    add_with_out_grad(r, type, {}, dims_from({{"X", "Out"}}));

  op_schema scale{.type = "scale",
                  .inputs = {{"X"}},
                  .outputs = {{"Out"}},
                  .attrs = {{"scale", 1.f}, {"bias", 0.f}, {"bias_after_scale", true}},
                  .infer_shape = dims_from({{"X", "Out"}}),
                  .make_grad = {}};
  // X@GRAD = scale * Out@GRAD (the bias drops out); the schema copy resolves `scale`.
  scale.make_grad = [schema = scale](const proto::OpDesc& fwd) {
    const float s = resolve_attributes(fwd, schema).get<float>("scale");
    return std::vector<proto::OpDesc>{scale_op(fwd, grad_name(output_args(fwd, "Out").at(0)),
                                               grad_name(input_args(fwd, "X").at(0)), s)};
  };
  r.add(std::move(scale));

  r.add({.type = "sum",
         .inputs = {{.name = "X", .duplicable = true}},
         .outputs = {{"Out"}},
         .attrs = {},
         .infer_shape = infer_sum,
         .make_grad = sum_grad});
}

void add_reduce_ops(op_registry& r) {
  const default_grad grad{.forward_inputs = {"X"},
                          .forward_outputs = {},
                          .output_grads = {"Out"},
                          .input_grads = {"X"}};
  const shape_fn infer_grad = dims_from({{"X", "X@GRAD"}});
  add_with_grad(r,
                {.type = "mean",
                 .inputs = {{"X"}},
                 .outputs = {{"Out"}},
                 .attrs = {},
                 .infer_shape = infer_mean,
                 .make_grad = {}},
                grad, infer_grad);
  add_with_grad(
      r,
      {.type = "reduce_mean",
       .inputs = {{"X"}},
       .outputs = {{"Out"}},
       .attrs = {{"dim", std::vector<std::int32_t>{0}}, {"keep_dim", false}, {"reduce_all", false}},
       .infer_shape = infer_reduce<std::int32_t>,
       .make_grad = {}},
      grad, infer_grad);
  // dim as LONGS, which also takes the INTS older programs hold; as in Paddle, the grad reads
  // X (for its dims) and Out@GRAD.
  add_with_grad(r,
                {.type = "reduce_sum",
                 .inputs = {{"X"}},
                 .outputs = {{"Out"}},
                 .attrs = {{"dim", std::vector<std::int64_t>{0}},
                           {"keep_dim", false},
                           {"reduce_all", false},
                           {"in_dtype", std::int32_t{-1}},
                           {"out_dtype", std::int32_t{-1}}},
                 .infer_shape = infer_reduce_sum,
                 .make_grad = {}},
                grad, infer_grad);
}

} // namespace

void register_math_ops(op_registry& r) {
  add_gemm_ops(r);
  add_unary_ops(r);
  add_reduce_ops(r);
}

} // namespace pe

// The math op group end to end: schemas (shape inference, grad makers), CPU kernels
// (hand-computed values, in-place bindings, shape errors) and gradients checked against
// central differences.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "graph/exec/bound_op.hpp"
#include "graph/exec/scope.hpp"
#include "kernels/cpu/blas.hpp"
#include "graph/attributes.hpp"
#include "graph/op_registry.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/op_test.hpp"

namespace pe {
namespace {

using attr_list = std::vector<std::pair<std::string, attribute>>;
using slot_list = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// Runs one op on `vars`, its slots bound to the named variables.
void run_op(scope& vars, const std::string& type, const slot_list& inputs, const slot_list& outputs,
            const attr_list& attrs = {}) {
  proto::OpDesc op;
  op.set_type(type);
  for (const auto& [slot, names] : inputs) set_input(op, slot, names);
  for (const auto& [slot, names] : outputs) set_output(op, slot, names);
  for (const auto& [name, value] : attrs) set_attr(op, name, value);
  bound_op(op, vars, place::cpu(), 0).run();
}

/// Runs `type` with each input slot bound to a variable of the slot's name; returns Out.
tensor run_forward(const std::string& type,
                   const std::vector<std::pair<std::string, tensor>>& inputs,
                   const attr_list& attrs = {}) {
  scope vars;
  slot_list slots;
  for (const auto& [slot, value] : inputs) {
    vars.var(slot) = value.clone();
    slots.push_back({slot, {slot}});
  }
  run_op(vars, type, slots, {{"Out", {"Out"}}}, attrs);
  return vars.get("Out");
}

using testing::contains;
using testing::error_of;
using testing::iota;
using testing::tensor_is;
using testing::values;

// --- forward values --------------------------------------------------------------------

TEST(MathOps, MulFlattensAtNumColDims) {
  // Y [3, 1, 2] flattens at y_num_col_dims 1 to [3, 2]; Out = X[:1] ++ Y[1:].
  tensor out = run_forward("mul", {{"X", values({1, 2, 3, 4, 5, 6}, {2, 3})},
                                   {"Y", values({1, 0, 0, 1, 1, 1}, {3, 1, 2})}});
  EXPECT_TRUE(tensor_is(out, {2, 1, 2}, {4, 5, 10, 11}));

  // X [2, 2, 3] flattens at x_num_col_dims 2 to [4, 3]: Out holds its row sums.
  tensor sums = run_forward("mul", {{"X", iota({2, 2, 3})}, {"Y", values({1, 1, 1}, {3, 1})}},
                            {{"x_num_col_dims", std::int32_t{2}}});
  EXPECT_TRUE(tensor_is(sums, {2, 2, 1}, {3, 12, 21, 30}));
}

TEST(MathOps, MatmulBatchedWithTransposes) {
  tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2});
  tensor y = values({-3, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5}, {2, 2, 3});
  tensor out =
      run_forward("matmul_v2", {{"X", x}, {"Y", y}}, {{"trans_x", true}, {"trans_y", true}});
  EXPECT_TRUE(tensor_is(out, {2, 2, 2}, {-20.5, -7, -28, -10, 15.5, 56, 17, 62}));
}

TEST(MathOps, MatmulBroadcastsRank2Y) {
  tensor y = values({1, 0, 0, 1, 1, 1}, {3, 2});
  tensor stacked = run_forward("matmul_v2", {{"X", iota({2, 2, 3})}, {"Y", y}});
  EXPECT_TRUE(tensor_is(stacked, {2, 2, 2}, {2, 3, 8, 9, 14, 15, 20, 21}));
  tensor transposed =
      run_forward("matmul_v2", {{"X", iota({2, 3, 2})}, {"Y", y}}, {{"trans_x", true}});
  EXPECT_TRUE(tensor_is(transposed, {2, 2, 2}, {4, 6, 6, 8, 16, 18, 18, 20}));
}

TEST(MathOps, ElementwiseAddBroadcastsAtAxis) {
  const std::vector<float> expected = {10, 11, 22, 23, 34, 35, 16, 17, 28, 29, 40, 41};
  tensor mid =
      run_forward("elementwise_add", {{"X", iota({2, 3, 2})}, {"Y", values({10, 20, 30}, {3})}},
                  {{"axis", std::int32_t{1}}});
  EXPECT_TRUE(tensor_is(mid, {2, 3, 2}, expected));
  // Y [3, 1] with axis -1 starts at axis 1; its trailing 1 broadcasts like a missing dim.
  tensor trailing =
      run_forward("elementwise_add", {{"X", iota({2, 3, 2})}, {"Y", values({10, 20, 30}, {3, 1})}});
  EXPECT_TRUE(tensor_is(trailing, {2, 3, 2}, expected));
  tensor bias =
      run_forward("elementwise_add", {{"X", iota({2, 3})}, {"Y", values({1, -1, 2}, {3})}});
  EXPECT_TRUE(tensor_is(bias, {2, 3}, {1, 0, 4, 4, 3, 7}));
}

TEST(MathOps, Activations) {
  tensor x = values({-1, 0.5, 2, -0.25}, {2, 2});
  EXPECT_TRUE(tensor_is(run_forward("relu", {{"X", x}}), {2, 2}, {0, 0.5, 2, 0}));
  EXPECT_TRUE(tensor_is(run_forward("tanh", {{"X", x}}), {2, 2},
                        {-0.76159416f, 0.46211716f, 0.96402758f, -0.24491866f}));
  EXPECT_TRUE(tensor_is(run_forward("sigmoid", {{"X", x}}), {2, 2},
                        {0.26894142f, 0.62245933f, 0.88079708f, 0.43782350f}));
}

TEST(MathOps, ScaleAppliesBiasBeforeOrAfter) {
  tensor x = values({1, 2, 3}, {3});
  EXPECT_TRUE(
      tensor_is(run_forward("scale", {{"X", x}}, {{"scale", 2.f}, {"bias", 1.f}}), {3}, {3, 5, 7}));
  EXPECT_TRUE(tensor_is(run_forward("scale", {{"X", x}},
                                    {{"scale", 2.f}, {"bias", 1.f}, {"bias_after_scale", false}}),
                        {3}, {4, 6, 8}));
}

TEST(MathOps, SumAddsAllInputs) {
  scope vars;
  vars.var("a") = values({1, 2}, {2});
  vars.var("b") = values({10, 20}, {2});
  vars.var("c") = values({100, 200}, {2});
  run_op(vars, "sum", {{"X", {"a", "b", "c"}}}, {{"Out", {"s"}}});
  EXPECT_TRUE(tensor_is(vars.get("s"), {2}, {111, 222}));
  EXPECT_TRUE(tensor_is(vars.get("a"), {2}, {1, 2}));
}

TEST(MathOps, MeanAndReduceMean) {
  EXPECT_TRUE(tensor_is(run_forward("mean", {{"X", values({1, 2, 3, 4}, {2, 2})}}), {1}, {2.5}));

  tensor x = iota({2, 3, 2});
  auto reduce = [&](const attr_list& attrs) {
    return run_forward("reduce_mean", {{"X", x}}, attrs);
  };
  EXPECT_TRUE(tensor_is(reduce({}), {3, 2}, {3, 4, 5, 6, 7, 8})); // default dim {0}
  EXPECT_TRUE(tensor_is(reduce({{"dim", std::vector<std::int32_t>{1}}, {"keep_dim", true}}),
                        {2, 1, 2}, {2, 3, 8, 9}));
  EXPECT_TRUE(tensor_is(reduce({{"dim", std::vector<std::int32_t>{0, -1}}}), {3}, {3.5, 5.5, 7.5}));
  EXPECT_TRUE(tensor_is(reduce({{"reduce_all", true}}), {1}, {5.5}));
  EXPECT_TRUE(tensor_is(reduce({{"reduce_all", true}, {"keep_dim", true}}), {1, 1, 1}, {5.5}));
  EXPECT_TRUE(tensor_is(reduce({{"dim", std::vector<std::int32_t>{0, 1, 2}}}), {1}, {5.5}));
}

// --- in place --------------------------------------------------------------------------

TEST(MathOps, SumAccumulatesInPlace) {
  scope vars;
  vars.var("g") = values({1, 2}, {2});
  vars.var("h") = values({10, 20}, {2});
  vars.var("k") = values({100, 200}, {2});
  const void* buffer = vars.get("g").raw();
  run_op(vars, "sum", {{"X", {"g", "h", "k"}}}, {{"Out", {"g"}}});
  EXPECT_TRUE(tensor_is(vars.get("g"), {2}, {111, 222}));
  EXPECT_EQ(vars.get("g").raw(), buffer); // accumulated into X[0]'s buffer

  // Out may be any input; one bound twice must still be counted twice.
  run_op(vars, "sum", {{"X", {"h", "k"}}}, {{"Out", {"k"}}});
  EXPECT_TRUE(tensor_is(vars.get("k"), {2}, {110, 220}));
  run_op(vars, "sum", {{"X", {"h", "k", "h"}}}, {{"Out", {"h"}}});
  EXPECT_TRUE(tensor_is(vars.get("h"), {2}, {130, 260}));
}

TEST(MathOps, OutputMayBeAnInput) {
  scope vars;
  vars.var("x") = values({-1, 2, -3, 4}, {2, 2});
  run_op(vars, "relu", {{"X", {"x"}}}, {{"Out", {"x"}}});
  EXPECT_TRUE(tensor_is(vars.get("x"), {2, 2}, {0, 2, 0, 4}));

  // Out = X * X for a square X: GEMM reads X while Out is written.
  vars.var("m") = values({1, 2, 3, 4}, {2, 2});
  run_op(vars, "matmul_v2", {{"X", {"m"}}, {"Y", {"m"}}}, {{"Out", {"m"}}});
  EXPECT_TRUE(tensor_is(vars.get("m"), {2, 2}, {7, 10, 15, 22}));

  // A broadcast Y re-read for every row of X, and written as Out.
  vars.var("v") = values({1, 2}, {2});
  vars.var("w") = values({1, 2, 3, 4, 5, 6}, {3, 2});
  run_op(vars, "elementwise_add", {{"X", {"w"}}, {"Y", {"v"}}}, {{"Out", {"v"}}});
  EXPECT_TRUE(tensor_is(vars.get("v"), {3, 2}, {2, 4, 4, 6, 6, 8}));
  run_op(vars, "elementwise_add", {{"X", {"w"}}, {"Y", {"w"}}}, {{"Out", {"w"}}});
  EXPECT_TRUE(tensor_is(vars.get("w"), {3, 2}, {2, 4, 6, 8, 10, 12}));
}

// --- grad ops --------------------------------------------------------------------------

TEST(MathOps, MulGradComputesOnlyBoundOutputs) {
  scope vars;
  vars.var("x") = values({1, 2, 3, 4, 5, 6}, {2, 3});
  vars.var("y") = values({1, 0, 0, 1, 1, 1}, {3, 2});
  vars.var("dout") = values({1, 0, 0, 1}, {2, 2});
  run_op(vars, "mul_grad", {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"dout"}}},
         {{"Y@GRAD", {"dy"}}});
  EXPECT_TRUE(tensor_is(vars.get("dy"), {3, 2}, {1, 4, 2, 5, 3, 6})); // X^T * dOut
  EXPECT_EQ(vars.find("dx"), nullptr);
}

TEST(MathOps, ScaleAndSumGradMakersEmitScaleOps) {
  const op_registry& ops = op_registry::global();
  proto::OpDesc fwd;
  fwd.set_type("scale");
  set_input(fwd, "X", {"x"});
  set_output(fwd, "Out", {"y"});
  set_attr(fwd, "scale", 3.f);
  set_attr(fwd, "bias", 5.f);
  auto grads = ops.find("scale")->make_grad(fwd);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "scale");
  EXPECT_EQ(input_args(grads[0], "X"), std::vector<std::string>{"y@GRAD"});
  EXPECT_EQ(output_args(grads[0], "Out"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(from_proto(*find_attr(grads[0], "scale")), attribute(3.f));
  EXPECT_EQ(from_proto(*find_attr(grads[0], "bias")), attribute(0.f));

  proto::OpDesc sum;
  sum.set_type("sum");
  set_input(sum, "X", {"a", "b"});
  set_output(sum, "Out", {"s"});
  grads = ops.find("sum")->make_grad(sum);
  ASSERT_EQ(grads.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(grads[i].type(), "scale");
    EXPECT_EQ(input_args(grads[i], "X"), std::vector<std::string>{"s@GRAD"});
    EXPECT_EQ(from_proto(*find_attr(grads[i], "scale")), attribute(1.f));
  }
  EXPECT_EQ(output_args(grads[1], "Out"), std::vector<std::string>{"b@GRAD"});
}

// --- gradient checks -------------------------------------------------------------------

using pe::testing::gradient_matches;
using pe::testing::random_tensor;

TEST(MathGrad, Mul) {
  EXPECT_TRUE(gradient_matches(
      {.op_type = "mul",
       .inputs = {{"X", {random_tensor({2, 3}, 1)}}, {"Y", {random_tensor({3, 4}, 2)}}},
       .attrs = {},
       .check_slots = {"X", "Y"}}));
  EXPECT_TRUE(gradient_matches(
      {.op_type = "mul",
       .inputs = {{"X", {random_tensor({2, 2, 3}, 3)}}, {"Y", {random_tensor({3, 1, 2}, 4)}}},
       .attrs = {{"x_num_col_dims", std::int32_t{2}}},
       .check_slots = {"X", "Y"}}));
}

/// The gradient check of a matmul-like op in every transpose combination, unbatched,
/// batched and with Y broadcast over the batch. `transposes` names the op's two transpose
/// attributes; `extra` holds its other attributes.
void expect_matmul_gradients(const std::string& type,
                             const std::pair<std::string, std::string>& transposes,
                             const attr_list& extra, std::uint64_t seed) {
  struct shapes {
    shape_t x, y;
  };
  // op(X) is [.., 3, 4] and op(Y) [.., 4, 2] in every case.
  for (bool trans_x : {false, true})
    for (bool trans_y : {false, true}) {
      shape_t xm = trans_x ? shape_t{4, 3} : shape_t{3, 4};
      shape_t ym = trans_y ? shape_t{2, 4} : shape_t{4, 2};
      for (const shapes& s : {shapes{xm, ym}, shapes{{2, xm[0], xm[1]}, {2, ym[0], ym[1]}},
                              shapes{{2, xm[0], xm[1]}, ym}}) {
        SCOPED_TRACE(type + ": X " + to_string(s.x) + " Y " + to_string(s.y));
        attr_list attrs = {{transposes.first, trans_x}, {transposes.second, trans_y}};
        attrs.insert(attrs.end(), extra.begin(), extra.end());
        EXPECT_TRUE(gradient_matches(
            {.op_type = type,
             .inputs = {{"X", {random_tensor(s.x, seed)}}, {"Y", {random_tensor(s.y, seed + 1)}}},
             .attrs = attrs,
             .check_slots = {"X", "Y"}}));
      }
    }
}

TEST(MathGrad, MatmulAllTransposesAndBroadcast) {
  expect_matmul_gradients("matmul_v2", {"trans_x", "trans_y"}, {}, 5);
}

TEST(MathGrad, ElementwiseAdd) {
  struct broadcast {
    shape_t x, y;
    std::int32_t axis;
  };
  for (const broadcast& b : {broadcast{{2, 3}, {2, 3}, -1}, broadcast{{2, 3, 4}, {3}, 1},
                             broadcast{{2, 3, 4}, {3, 1}, -1}, broadcast{{2, 3, 4}, {4}, -1}}) {
    SCOPED_TRACE("X " + to_string(b.x) + " Y " + to_string(b.y));
    EXPECT_TRUE(gradient_matches(
        {.op_type = "elementwise_add",
         .inputs = {{"X", {random_tensor(b.x, 7)}}, {"Y", {random_tensor(b.y, 8)}}},
         .attrs = {{"axis", b.axis}},
         .check_slots = {"X", "Y"}}));
  }
}

TEST(MathGrad, Activations) {
  // relu has a kink at 0: keep every input at least 0.1 away from it.
  tensor x = random_tensor({3, 4}, 9);
  for (float& v : x.values<float>()) v = std::copysign(0.1f + std::abs(v), v);
  for (const char* type : {"relu", "tanh", "sigmoid"}) {
    SCOPED_TRACE(type);
    EXPECT_TRUE(gradient_matches(
        {.op_type = type, .inputs = {{"X", {x}}}, .attrs = {}, .check_slots = {"X"}}));
  }
}

TEST(MathGrad, Scale) {
  EXPECT_TRUE(
      gradient_matches({.op_type = "scale",
                        .inputs = {{"X", {random_tensor({2, 3}, 10)}}},
                        .attrs = {{"scale", -1.5f}, {"bias", 2.f}, {"bias_after_scale", false}},
                        .check_slots = {"X"}}));
}

TEST(MathGrad, Sum) {
  EXPECT_TRUE(gradient_matches({.op_type = "sum",
                                .inputs = {{"X",
                                            {random_tensor({2, 3}, 11), random_tensor({2, 3}, 12),
                                             random_tensor({2, 3}, 13)}}},
                                .attrs = {},
                                .check_slots = {"X"}}));
}

TEST(MathGrad, MeanAndReduceMean) {
  EXPECT_TRUE(gradient_matches({.op_type = "mean",
                                .inputs = {{"X", {random_tensor({3, 4}, 14)}}},
                                .attrs = {},
                                .check_slots = {"X"}}));
  for (const attr_list& attrs :
       {attr_list{{"dim", std::vector<std::int32_t>{1}}, {"keep_dim", true}},
        attr_list{{"dim", std::vector<std::int32_t>{0, -1}}}, attr_list{{"reduce_all", true}}}) {
    EXPECT_TRUE(gradient_matches({.op_type = "reduce_mean",
                                  .inputs = {{"X", {random_tensor({2, 3, 4}, 15)}}},
                                  .attrs = attrs,
                                  .check_slots = {"X"}}));
  }
}

// --- shape errors and shape inference --------------------------------------------------

TEST(MathOps, KernelsRejectMismatchedShapes) {
  std::string mul = error_of([] {
    run_forward("mul", {{"X", iota({2, 3})}, {"Y", iota({4, 5})}});
  });
  EXPECT_TRUE(contains(mul, "mul") && contains(mul, "[2, 3]") && contains(mul, "[4, 5]")) << mul;

  std::string matmul = error_of([] {
    run_forward("matmul_v2", {{"X", iota({2, 3, 4})}, {"Y", iota({3, 4, 5})}});
  });
  EXPECT_TRUE(contains(matmul, "batch dims") && contains(matmul, "[3, 4, 5]")) << matmul;

  std::string add = error_of([] {
    run_forward("elementwise_add", {{"X", iota({2, 3, 4})}, {"Y", iota({1, 4})}});
  });
  EXPECT_TRUE(contains(add, "Y [1, 4]")) << add;

  std::string reduce = error_of([] {
    run_forward("reduce_mean", {{"X", iota({2, 3})}}, {{"dim", std::vector<std::int32_t>{2}}});
  });
  EXPECT_TRUE(contains(reduce, "dim 2 is out of range")) << reduce;

  std::string sum = error_of([] {
    scope vars;
    vars.var("a") = iota({2, 3});
    vars.var("b") = iota({3, 2});
    run_op(vars, "sum", {{"X", {"a", "b"}}}, {{"Out", {"s"}}});
  });
  EXPECT_TRUE(contains(sum, "X[1]") && contains(sum, "[3, 2]")) << sum;

  std::string dtype_error = error_of([] {
    run_forward("relu", {{"X", tensor::from_vector<std::int64_t>({1, 2}, {2})}});
  });
  EXPECT_TRUE(contains(dtype_error, "FP32")) << dtype_error;
}

/// The dims shape inference gives output `out` of an op over variables `vars`.
shape_t inferred(const std::string& type, const slot_list& inputs, const var_table& vars,
                 const attr_list& attrs = {}, const std::string& out = "out") {
  proto::OpDesc op;
  op.set_type(type);
  for (const auto& [slot, names] : inputs) set_input(op, slot, names);
  set_output(op, type.ends_with("_grad") ? "X@GRAD" : "Out", {out});
  for (const auto& [name, value] : attrs) set_attr(op, name, value);
  const op_schema& schema = *op_registry::global().find(type);
  const attribute_map resolved = resolve_attributes(op, schema);
  shape_context ctx(op, resolved, vars, 0);
  schema.infer_shape(ctx);
  for (const auto& [name, info] : ctx.inferred())
    if (name == out) return info.dims;
  ADD_FAILURE() << type << " inferred nothing for " << out;
  return {};
}

TEST(MathShapes, InferencePropagatesUnknownBatch) {
  const var_table vars = {{"x", {dtype::fp32, {-1, 784}}},  {"w", {dtype::fp32, {784, 200}}},
                          {"b", {dtype::fp32, {200}}},      {"h", {dtype::fp32, {-1, 200}}},
                          {"t", {dtype::fp32, {-1, 3, 4}}}, {"y", {dtype::fp32, {3, 1}}},
                          {"u", {dtype::fp32, {-1, 4, 5}}}};
  EXPECT_EQ(inferred("mul", {{"X", {"x"}}, {"Y", {"w"}}}, vars), (shape_t{-1, 200}));
  EXPECT_EQ(inferred("elementwise_add", {{"X", {"h"}}, {"Y", {"b"}}}, vars), (shape_t{-1, 200}));
  EXPECT_EQ(
      inferred("elementwise_add", {{"X", {"t"}}, {"Y", {"y"}}}, vars, {{"axis", std::int32_t{1}}}),
      (shape_t{-1, 3, 4}));
  EXPECT_EQ(inferred("matmul_v2", {{"X", {"t"}}, {"Y", {"u"}}}, vars), (shape_t{-1, 3, 5}));
  EXPECT_EQ(inferred("reduce_mean", {{"X", {"t"}}}, vars, {{"dim", std::vector<std::int32_t>{-1}}}),
            (shape_t{-1, 3}));
  EXPECT_EQ(inferred("mean", {{"X", {"t"}}}, vars), (shape_t{1}));
  EXPECT_EQ(inferred("sum", {{"X", {"h", "h"}}}, vars), (shape_t{-1, 200}));
  EXPECT_EQ(inferred("tanh_grad", {{"Out", {"h"}}, {"Out@GRAD", {"h"}}}, vars), (shape_t{-1, 200}));
  EXPECT_EQ(inferred("mul_grad", {{"X", {"x"}}, {"Y", {"w"}}, {"Out@GRAD", {"h"}}}, vars),
            (shape_t{-1, 784}));
}

TEST(MathShapes, InferenceRejectsKnownMismatches) {
  const var_table vars = {{"x", {dtype::fp32, {-1, 784}}},
                          {"w", {dtype::fp32, {100, 200}}},
                          {"t", {dtype::fp32, {-1, 3, 4}}},
                          {"y", {dtype::fp32, {4, 3}}},
                          {"i", {dtype::int64, {-1, 784}}}};
  std::string mul = error_of([&] { inferred("mul", {{"X", {"x"}}, {"Y", {"w"}}}, vars); });
  EXPECT_TRUE(contains(mul, "op #0 (mul)") && contains(mul, "[-1, 784]") &&
              contains(mul, "[100, 200]"))
      << mul;
  std::string add = error_of([&] {
    inferred("elementwise_add", {{"X", {"t"}}, {"Y", {"y"}}}, vars);
  });
  EXPECT_TRUE(contains(add, "[4, 3]")) << add;
  std::string relu = error_of([&] { inferred("relu", {{"X", {"i"}}}, vars); });
  EXPECT_TRUE(contains(relu, "X must be FP32")) << relu;
}

TEST(MathBlas, DefaultsToOneThreadAndObeysTheApplication) {
  EXPECT_EQ(blas_threads(), 1);
  set_blas_threads(2);
  EXPECT_EQ(blas_threads(), 2);
  set_blas_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  EXPECT_THROW(set_blas_threads(0), error);
}

// --- matmul (v1) -----------------------------------------------------------------------

TEST(Matmul, ScalesBatchedProductsByAlpha) {
  // matmul_v2's MatmulBatchedWithTransposes case, doubled by alpha.
  tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2});
  tensor y = values({-3, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5}, {2, 2, 3});
  tensor out = run_forward("matmul", {{"X", x}, {"Y", y}},
                           {{"transpose_X", true}, {"transpose_Y", true}, {"alpha", 2.f}});
  EXPECT_TRUE(tensor_is(out, {2, 2, 2}, {-41, -14, -56, -20, 31, 112, 34, 124}));
  // Defaults: no transposes, alpha 1; a rank-2 Y is shared by the batch.
  tensor shared =
      run_forward("matmul", {{"X", iota({2, 2, 3})}, {"Y", values({1, 0, 0, 1, 1, 1}, {3, 2})}});
  EXPECT_TRUE(tensor_is(shared, {2, 2, 2}, {2, 3, 8, 9, 14, 15, 20, 21}));
}

TEST(Matmul, InfersAndRejectsShapes) {
  const var_table vars = {{"t", {dtype::fp32, {-1, 3, 4}}}, {"u", {dtype::fp32, {-1, 5, 4}}}};
  EXPECT_EQ(inferred("matmul", {{"X", {"t"}}, {"Y", {"u"}}}, vars, {{"transpose_Y", true}}),
            (shape_t{-1, 3, 5}));
  const std::string at_build =
      error_of([&] { inferred("matmul", {{"X", {"t"}}, {"Y", {"u"}}}, vars); });
  EXPECT_TRUE(contains(at_build, "op #0 (matmul): inner dims differ (4 vs 5) for X [-1, 3, 4] "
                                 "and Y [-1, 5, 4]"))
      << at_build;
  const std::string at_run = error_of([] {
    run_forward("matmul", {{"X", iota({2, 3, 4})}, {"Y", iota({2, 5, 4})}});
  });
  EXPECT_TRUE(contains(at_run, "matmul") && contains(at_run, "inner dims differ (4 vs 5)"))
      << at_run;
}

TEST(MatmulGrad, AllTransposesBroadcastAndAlpha) {
  expect_matmul_gradients("matmul", {"transpose_X", "transpose_Y"}, {{"alpha", 1.5f}}, 7);
}

} // namespace
} // namespace pe

// reduce_sum: sums over dim (LONGS as Paddle 2.6 writes it, INTS as older programs do),
// keep_dim and reduce_all; in_dtype/out_dtype left at FP32; Paddle's grad maker; shape
// inference; the errors users see; and gradients against central differences.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph/attributes.hpp"
#include "graph/exec/scope.hpp"
#include "graph/op_registry.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::shape_t;
using pe::tensor;
using longs = std::vector<std::int64_t>;

pe::proto::OpDesc reduce_sum_op(const attr_list& attrs = {}) {
  return make_op("reduce_sum", {{"X", "x"}}, {{"Out", "out"}}, attrs);
}

/// reduce_sum's Out over X = `x`.
tensor forward(const tensor& x, const attr_list& attrs) {
  pe::scope vars;
  vars.var("x") = x.clone();
  run_op(reduce_sum_op(attrs), vars);
  return vars.get("out");
}

TEST(ReduceSum, SumsOverDim) {
  // X [2, 3, 2] = 0..11.
  const tensor x = iota({2, 3, 2});
  EXPECT_TRUE(tensor_is(forward(x, {}), {3, 2}, {6, 8, 10, 12, 14, 16})); // default dim {0}
  EXPECT_TRUE(tensor_is(forward(x, {{"dim", longs{1}}, {"keep_dim", true}}), {2, 1, 2},
                        {0 + 2 + 4, 1 + 3 + 5, 6 + 8 + 10, 7 + 9 + 11}));
  EXPECT_TRUE(tensor_is(forward(x, {{"dim", longs{0, -1}}}), {3}, {14, 22, 30}));
  EXPECT_TRUE(tensor_is(forward(x, {{"reduce_all", true}}), {1}, {66}));
  EXPECT_TRUE(tensor_is(forward(x, {{"reduce_all", true}, {"keep_dim", true}}), {1, 1, 1}, {66}));
  // An empty dim reduces every axis, as Paddle.
  EXPECT_TRUE(tensor_is(forward(x, {{"dim", longs{}}}), {1}, {66}));
}

TEST(ReduceSum, TakesDimAsIntsAndFp32Dtypes) {
  const tensor x = iota({2, 3});
  EXPECT_TRUE(tensor_is(forward(x, {{"dim", ints{1}}}), {2}, {3, 12}));
  EXPECT_TRUE(tensor_is(forward(x, {{"dim", longs{1}}, {"in_dtype", std::int32_t{5}},
                                    {"out_dtype", std::int32_t{5}}}),
                        {2}, {3, 12}));
}

TEST(ReduceSum, InPlaceOverX) {
  pe::scope vars;
  vars.var("x") = iota({2, 3});
  run_op(make_op("reduce_sum", {{"X", "x"}}, {{"Out", "x"}}, {{"dim", longs{0}}}), vars);
  EXPECT_TRUE(tensor_is(vars.get("x"), {3}, {3, 5, 7}));
}

TEST(ReduceSum, KernelRefusesBadDimAndDtypes) {
  pe::scope vars;
  vars.var("x") = iota({2, 3});
  const std::string dim = error_of(reduce_sum_op({{"dim", longs{2}}}), vars);
  EXPECT_TRUE(contains(dim, "reduce_sum") && contains(dim, "dim 2 is out of range for X of rank 2"))
      << dim;
  const std::string out_dtype = error_of(reduce_sum_op({{"out_dtype", std::int32_t{3}}}), vars);
  EXPECT_TRUE(contains(out_dtype, "reduce_sum") &&
              contains(out_dtype, "out_dtype 3 is not supported: only -1 (X's dtype) or 5 (FP32)"))
      << out_dtype;
  vars.var("i") = tensor::zeros(pe::dtype::int64, {2});
  const std::string x_dtype =
      error_of(make_op("reduce_sum", {{"X", "i"}}, {{"Out", "out"}}), vars);
  EXPECT_TRUE(contains(x_dtype, "reduce_sum") && contains(x_dtype, "X must be FP32, got INT64"))
      << x_dtype;
}

TEST(ReduceSum, InfersShapesAndRefusesBadAttributes) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 3, 4}}}};
  EXPECT_EQ(infer(reduce_sum_op({{"dim", longs{-1}}}), vars).at("out").dims, (shape_t{-1, 3}));
  EXPECT_EQ(infer(reduce_sum_op({{"dim", ints{1}}, {"keep_dim", true}}), vars).at("out").dims,
            (shape_t{-1, 1, 4}));
  EXPECT_EQ(infer(reduce_sum_op({{"reduce_all", true}}), vars).at("out").dims, (shape_t{1}));

  const std::string dim = infer_error(reduce_sum_op({{"dim", longs{-4}}}), vars);
  EXPECT_TRUE(contains(dim, "op #0 (reduce_sum)") &&
              contains(dim, "dim -4 is out of range for X of rank 3"))
      << dim;
  const std::string in_dtype = infer_error(reduce_sum_op({{"in_dtype", std::int32_t{6}}}), vars);
  EXPECT_TRUE(contains(in_dtype, "op #0 (reduce_sum)") && contains(in_dtype, "in_dtype 6 is not supported"))
      << in_dtype;
  // dim of another attribute type than INTS or LONGS names both.
  const std::string type = infer_error(reduce_sum_op({{"dim", std::int32_t{1}}}), vars);
  EXPECT_TRUE(contains(type, "attribute 'dim' has type")) << type;
}

TEST(ReduceSum, GradReadsXAndOutGradAsPaddle) {
  const auto op = reduce_sum_op({{"dim", longs{1}}, {"keep_dim", true}});
  const auto grads = pe::op_registry::global().find("reduce_sum")->make_grad(op);
  ASSERT_EQ(grads.size(), 1u);
  const auto& grad = grads[0];
  EXPECT_EQ(grad.type(), "reduce_sum_grad");
  EXPECT_EQ(pe::input_args(grad, "X"), std::vector<std::string>{"x"});
  EXPECT_TRUE(pe::input_args(grad, "Out").empty());
  EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grad, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "dim")), pe::attribute(longs{1}));
  EXPECT_EQ(infer(grad, {{"x", {pe::dtype::fp32, {-1, 3}}}, {"out@GRAD", {pe::dtype::fp32, {-1, 1}}}})
                .at("x@GRAD")
                .dims,
            (shape_t{-1, 3}));

  // X@GRAD is Out@GRAD repeated along the summed axis, unscaled.
  pe::scope vars;
  vars.var("x") = iota({2, 3});
  vars.var("out@GRAD") = values({1.5, -2}, {2, 1});
  run_op(grad, vars);
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {2, 3}, {1.5, 1.5, 1.5, -2, -2, -2}));

  // Out@GRAD of other dims than Out's is refused, naming both.
  vars.var("out@GRAD") = values({1, 2}, {2});
  const std::string message = error_of(grad, vars);
  EXPECT_TRUE(contains(message, "reduce_sum_grad") &&
              contains(message, "Out@GRAD has dims [2], expected [2, 1]"))
      << message;
}

TEST(ReduceSumGrad, MatchesCentralDifferences) {
  for (const attr_list& attrs :
       {attr_list{}, attr_list{{"dim", longs{1}}, {"keep_dim", true}}, attr_list{{"dim", longs{0, -1}}},
        attr_list{{"dim", ints{2}}}, attr_list{{"reduce_all", true}}}) {
    EXPECT_TRUE(gradient_matches({.op_type = "reduce_sum",
                                  .inputs = {{"X", {random_tensor({2, 3, 4}, 41)}}},
                                  .attrs = attrs,
                                  .check_slots = {"X"}}));
  }
}

} // namespace

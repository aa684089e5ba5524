// elementwise_sub, elementwise_mul, elementwise_div: forward values on hand-computed cases
// with Y broadcast at an axis, grad ops and their makers, shape inference, the errors users
// see, and gradients against central differences (elementwise_add: math_ops_test.cpp); add,
// sub and mul on INT64 and INT32 operands (BERT's position ids), computed in their type.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
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

/// Out of `type` over X = x and Y = y.
tensor forward(const std::string& type, const tensor& x, const tensor& y,
               const attr_list& attrs = {}) {
  pe::scope vars;
  vars.var("x") = x.clone();
  vars.var("y") = y.clone();
  run_op(binary_op(type, attrs), vars);
  return vars.get("out");
}

TEST(ElementwiseOps, BroadcastYAtAxis) {
  // X [2, 3, 2] = 0..11; Y [3] spans axis 1, so element (a, b, c) meets Y[b].
  const attr_list axis1 = {{"axis", std::int32_t{1}}};
  EXPECT_TRUE(tensor_is(
      forward("elementwise_sub", iota({2, 3, 2}), values({10, 20, 30}, {3}), axis1), {2, 3, 2},
      {-10, -9, -18, -17, -26, -25, -4, -3, -12, -11, -20, -19}));
  EXPECT_TRUE(tensor_is(forward("elementwise_mul", iota({2, 3, 2}), values({1, 2, 3}, {3}), axis1),
                        {2, 3, 2}, {0, 1, 4, 6, 12, 15, 6, 7, 16, 18, 30, 33}));
  // Y [3, 1] with the default axis also starts at axis 1: its trailing 1 broadcasts.
  EXPECT_TRUE(tensor_is(forward("elementwise_mul", iota({2, 3, 2}), values({1, 2, 3}, {3, 1})),
                        {2, 3, 2}, {0, 1, 4, 6, 12, 15, 6, 7, 16, 18, 30, 33}));
  const tensor x = values({2, 4, 6, 8, 10, 12}, {2, 3});
  EXPECT_TRUE(tensor_is(
      forward("elementwise_div", x, values({2, 4}, {2}), {{"axis", std::int32_t{0}}}), {2, 3},
      {1, 2, 3, 2, 2.5, 3}));
  EXPECT_TRUE(tensor_is(forward("elementwise_div", x, values({1, 2, 4}, {3})), {2, 3},
                        {2, 2, 1.5, 8, 5, 3}));
  EXPECT_TRUE(tensor_is(forward("elementwise_sub", x, x), {2, 3}, {0, 0, 0, 0, 0, 0}));
}

TEST(ElementwiseOps, OutputMayBeAnInput) {
  pe::scope vars;
  vars.var("x") = values({1, 2, 3, 4, 5, 6}, {3, 2});
  vars.var("y") = values({1, 2}, {2});
  // Out over the broadcast Y, which every row re-reads.
  run_op(make_op("elementwise_mul", {{"X", "x"}, {"Y", "y"}}, {{"Out", "y"}}), vars);
  EXPECT_TRUE(tensor_is(vars.get("y"), {3, 2}, {1, 4, 3, 8, 5, 12}));
  run_op(make_op("elementwise_sub", {{"X", "x"}, {"Y", "y"}}, {{"Out", "x"}}), vars);
  EXPECT_TRUE(tensor_is(vars.get("x"), {3, 2}, {0, -2, 0, -4, 0, -6}));
}

TEST(ElementwiseOps, GradsReduceOverBroadcastAxes) {
  // X [2, 3], Y [3], Out@GRAD = 1, 2, ..., 6.
  pe::scope vars;
  vars.var("x") = values({1, 2, 3, 4, 5, 6}, {2, 3});
  vars.var("y") = values({1, 2, 4}, {3});
  vars.var("out@GRAD") = values({1, 2, 3, 4, 5, 6}, {2, 3});
  auto grads_of = [&](const std::string& type) {
    const auto op = binary_op(type);
    run_op(op, vars);
    for (const auto& g : pe::op_registry::global().find(type)->make_grad(op)) run_op(g, vars);
  };
  grads_of("elementwise_sub");
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(tensor_is(vars.get("y@GRAD"), {3}, {-5, -7, -9}));
  grads_of("elementwise_mul");
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {2, 3}, {1, 4, 12, 4, 10, 24}));
  EXPECT_TRUE(tensor_is(vars.get("y@GRAD"), {3}, {1 + 16, 4 + 25, 9 + 36}));
  grads_of("elementwise_div");
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {2, 3}, {1, 1, 0.75, 4, 2.5, 1.5}));
  // -sum_i dOut * X / Y^2 per column.
  EXPECT_TRUE(tensor_is(vars.get("y@GRAD"), {3}, {-(1 + 16), -(4 + 25) / 4.f, -(9 + 36) / 16.f}));
}

TEST(ElementwiseOps, GradMakersFollowPaddle) {
  const auto& ops = pe::op_registry::global();
  auto div = ops.find("elementwise_div")->make_grad(binary_op("elementwise_div")).at(0);
  EXPECT_EQ(div.type(), "elementwise_div_grad");
  EXPECT_EQ(pe::input_args(div, "Out"), std::vector<std::string>{"out"});
  EXPECT_EQ(pe::input_args(div, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(div, "Y@GRAD"), std::vector<std::string>{"y@GRAD"});
  auto mul = ops.find("elementwise_mul")->make_grad(binary_op("elementwise_mul")).at(0);
  EXPECT_EQ(mul.type(), "elementwise_mul_grad");
  EXPECT_TRUE(pe::input_args(mul, "Out").empty());
  EXPECT_EQ(pe::input_args(mul, "X"), std::vector<std::string>{"x"});
}

TEST(ElementwiseOps, GradComputesOnlyBoundOutputs) {
  pe::scope vars;
  vars.var("x") = values({1, 2}, {2});
  vars.var("y") = values({3, 4}, {2});
  vars.var("dout") = values({1, 1}, {2});
  run_op(make_op("elementwise_mul_grad", {{"X", "x"}, {"Y", "y"}, {"Out@GRAD", "dout"}},
                 {{"X@GRAD", "dx"}}),
         vars);
  EXPECT_TRUE(tensor_is(vars.get("dx"), {2}, {3, 4}));
  EXPECT_EQ(vars.find("dy"), nullptr);
}

TEST(ElementwiseOps, InferShapesWithAxisAndUnknownBatch) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 3, 4}}},
                              {"y", {pe::dtype::fp32, {3}}},
                              {"out", {pe::dtype::fp32, {-1, 3, 4}}},
                              {"out@GRAD", {pe::dtype::fp32, {-1, 3, 4}}}};
  for (const char* type : {"elementwise_sub", "elementwise_mul", "elementwise_div"}) {
    SCOPED_TRACE(type);
    const auto op = binary_op(type, {{"axis", std::int32_t{1}}});
    EXPECT_EQ(infer(op, vars).at("out").dims, (shape_t{-1, 3, 4}));
    const auto grad = pe::op_registry::global().find(type)->make_grad(op).at(0);
    const auto grads = infer(grad, vars);
    EXPECT_EQ(grads.at("x@GRAD").dims, (shape_t{-1, 3, 4}));
    EXPECT_EQ(grads.at("y@GRAD").dims, (shape_t{3}));
  }
}

TEST(ElementwiseOps, AddSubMulComputeOnIntegersInTheirType) {
  using longs = std::vector<std::int64_t>;
  // cumsum(ones) - ones: the position ids BERT code computes, Y broadcast along the rows.
  const tensor x = tensor::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  const tensor y = tensor::from_vector<std::int64_t>({1, 1, 1}, {3});
  const tensor big = tensor::from_vector<std::int64_t>({(1LL << 40) + 1, 3, 5, 7, 9, 11}, {2, 3});
  const tensor sub = forward("elementwise_sub", x, y);
  EXPECT_EQ(sub.type(), pe::dtype::int64);
  EXPECT_EQ((elements_of<std::int64_t>(sub)), (longs{0, 1, 2, 3, 4, 5}));
  // Exact past 2^24 and 2^53, where an FP32 round trip would not be.
  EXPECT_EQ((elements_of<std::int64_t>(forward("elementwise_add", big, y))),
            (longs{(1LL << 40) + 2, 4, 6, 8, 10, 12}));
  EXPECT_EQ((elements_of<std::int64_t>(forward("elementwise_mul", x, tensor::from_vector<std::int64_t>({2, -1}, {2}),
                                               {{"axis", std::int32_t{0}}}))),
            (longs{2, 4, 6, -4, -5, -6}));
  const tensor i32 = forward("elementwise_add", tensor::from_vector<std::int32_t>({1, 2}, {2}),
                             tensor::from_vector<std::int32_t>({10, 20}, {2}));
  EXPECT_EQ(i32.type(), pe::dtype::int32);
  EXPECT_EQ((elements_of<std::int32_t>(i32)), (std::vector<std::int32_t>{11, 22}));

  // Shape inference gives Out X's integer dtype; mixed dtypes and integer division are refused.
  const pe::var_table vars = {{"x", {pe::dtype::int64, {-1, 8}}},
                              {"y", {pe::dtype::int64, {-1, 8}}},
                              {"f", {pe::dtype::fp32, {-1, 8}}}};
  const auto out = infer(binary_op("elementwise_sub"), vars);
  EXPECT_EQ(out.at("out").type, pe::dtype::int64);
  EXPECT_EQ(out.at("out").dims, (shape_t{-1, 8}));
  std::string message = infer_error(make_op("elementwise_add", {{"X", "x"}, {"Y", "f"}}, {{"Out", "out"}}), vars);
  EXPECT_TRUE(contains(message, "X is INT64 but Y is FP32: integer operands must share their dtype")) << message;
  message = infer_error(binary_op("elementwise_div"), vars);
  EXPECT_TRUE(contains(message, "X must be FP32, got INT64")) << message;
  message = error_of([&] { forward("elementwise_mul", x, values({1, 2, 3}, {3})); });
  EXPECT_TRUE(contains(message, "elementwise_mul") &&
              contains(message, "X is INT64 but Y is FP32: integer operands must share their dtype"))
      << message;
  message = error_of([&] { forward("elementwise_max", x, y); });
  EXPECT_TRUE(contains(message, "elementwise_max") && contains(message, "FP32")) << message;
}

TEST(ElementwiseOps, RejectBadShapes) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 3, 4}}},
                              {"y", {pe::dtype::fp32, {4, 3}}},
                              {"i", {pe::dtype::int64, {-1, 3, 4}}}};
  std::string message = infer_error(binary_op("elementwise_mul"), vars);
  EXPECT_TRUE(contains(message, "op #0 (elementwise_mul)") &&
              contains(message, "Y dim 0 does not match X dim 1") &&
              contains(message, "X [-1, 3, 4], Y [4, 3], axis -1"))
      << message;
  message =
      infer_error(make_op("elementwise_div", {{"X", "i"}, {"Y", "y"}}, {{"Out", "out"}}), vars);
  EXPECT_TRUE(contains(message, "X must be FP32")) << message;
  message = error_of([&] {
    forward("elementwise_sub", iota({2, 3}), iota({3}), {{"axis", std::int32_t{2}}});
  });
  EXPECT_TRUE(contains(message, "elementwise_sub") &&
              contains(message, "axis must be -1 or lie in [0, rank(X) - rank(Y)]"))
      << message;
  message = error_of([&] { forward("elementwise_div", iota({2, 3}), iota({2})); });
  EXPECT_TRUE(contains(message, "X [2, 3], Y [2], axis -1")) << message;
}

TEST(ElementwiseGrad, AllOpsAllBroadcasts) {
  struct broadcast {
    shape_t x, y;
    std::int32_t axis;
  };
  for (const char* type : {"elementwise_sub", "elementwise_mul", "elementwise_div"})
    for (const broadcast& b : {broadcast{{2, 3}, {2, 3}, -1}, broadcast{{2, 3, 4}, {3}, 1},
                               broadcast{{2, 3, 4}, {3, 1}, -1}, broadcast{{2, 3, 4}, {4}, -1},
                               broadcast{{2, 3, 4}, {2}, 0}}) {
      SCOPED_TRACE(std::string(type) + " X " + pe::to_string(b.x) + " Y " + pe::to_string(b.y));
      // Y stays away from 0, where division's gradient blows up.
      tensor y = pe::testing::random_tensor(b.y, 8, 0.5f, 1.5f);
      EXPECT_TRUE(pe::testing::gradient_matches(
          {.op_type = type,
           .inputs = {{"X", {pe::testing::random_tensor(b.x, 7)}}, {"Y", {y}}},
           .attrs = {{"axis", b.axis}},
           .check_slots = {"X", "Y"}}));
    }
}

} // namespace

// sqrt and squared_l2_norm (ClipGradByGlobalNorm's ops): forward values on hand-computed
// cases, Paddle's grad makers (sqrt_grad reads Out, squared_l2_norm_grad reads X), shape
// inference, the errors users see, and gradients against central differences.
#include <cmath>
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

pe::proto::OpDesc unary_op(const std::string& type) {
  return make_op(type, {{"X", "x"}}, {{"Out", "out"}});
}

/// Out of `type` over X = x.
tensor forward(const std::string& type, const tensor& x) {
  pe::scope vars;
  vars.var("x") = x.clone();
  run_op(unary_op(type), vars);
  return vars.get("out");
}

/// The single grad op `type`'s grad maker emits for unary_op(type).
pe::proto::OpDesc grad_of(const std::string& type) {
  const auto grads = pe::op_registry::global().find(type)->make_grad(unary_op(type));
  EXPECT_EQ(grads.size(), 1u);
  return grads.at(0);
}

// --- sqrt ------------------------------------------------------------------------------

TEST(Sqrt, ForwardValues) {
  EXPECT_TRUE(tensor_is(forward("sqrt", values({0, 1, 4, 2.25, 9, 0.01}, {2, 3})), {2, 3},
                        {0, 1, 2, 1.5, 3, 0.1f}));
  // As Paddle: a negative X gives NaN, not an error.
  EXPECT_TRUE(std::isnan(forward("sqrt", values({-1}, {1})).values<float>()[0]));
}

TEST(Sqrt, GradReadsOutAsPaddle) {
  const auto grad = grad_of("sqrt");
  EXPECT_EQ(grad.type(), "sqrt_grad");
  EXPECT_TRUE(pe::input_args(grad, "X").empty());
  EXPECT_EQ(pe::input_args(grad, "Out"), std::vector<std::string>{"out"});
  EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grad, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(infer(grad, {{"out", {pe::dtype::fp32, {-1, 7}}}, {"out@GRAD", {pe::dtype::fp32, {-1, 7}}}})
                .at("x@GRAD")
                .dims,
            (shape_t{-1, 7}));
}

TEST(Sqrt, GradIsHalfDoutOverOut) {
  // X@GRAD = Out@GRAD * 0.5 / Out, from Out alone (no X bound).
  pe::scope vars;
  vars.var("out") = values({1, 2, 0.5}, {3});
  vars.var("out@GRAD") = values({4, 2, -1}, {3});
  run_op(grad_of("sqrt"), vars);
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {3}, {2, 0.5, -1}));
}

TEST(Sqrt, InfersShapeAndRefusesNonFp32) {
  EXPECT_EQ(infer(unary_op("sqrt"), {{"x", {pe::dtype::fp32, {-1, 3, 4}}}}).at("out").dims,
            (shape_t{-1, 3, 4}));
  const std::string message = infer_error(unary_op("sqrt"), {{"x", {pe::dtype::int64, {2}}}});
  EXPECT_TRUE(contains(message, "op #0 (sqrt)") && contains(message, "X must be FP32, got INT64"))
      << message;
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::int32, {2});
  const std::string kernel_message = error_of(unary_op("sqrt"), vars);
  EXPECT_TRUE(contains(kernel_message, "sqrt") && contains(kernel_message, "X must be FP32, got INT32"))
      << kernel_message;
}

TEST(SqrtGrad, MatchesCentralDifferences) {
  EXPECT_TRUE(gradient_matches({.op_type = "sqrt",
                                .inputs = {{"X", {random_tensor({3, 5}, 31, 0.5f, 4.f)}}},
                                .attrs = {},
                                .check_slots = {"X"}}));
}

// --- squared_l2_norm -------------------------------------------------------------------

TEST(SquaredL2Norm, SumsSquaresIntoOneElement) {
  EXPECT_TRUE(tensor_is(forward("squared_l2_norm", values({1, -2, 3, 0.5, -0.5, 4}, {2, 3})), {1},
                        {1 + 4 + 9 + 0.25f + 0.25f + 16}));
  EXPECT_TRUE(tensor_is(forward("squared_l2_norm", values({-3}, {1})), {1}, {9}));
  // An empty X sums to 0.
  EXPECT_TRUE(tensor_is(forward("squared_l2_norm", tensor::zeros(pe::dtype::fp32, {0, 4})), {1}, {0}));
}

TEST(SquaredL2Norm, InPlaceOverX) {
  pe::scope vars;
  vars.var("x") = values({3, 4}, {2});
  run_op(make_op("squared_l2_norm", {{"X", "x"}}, {{"Out", "x"}}), vars);
  EXPECT_TRUE(tensor_is(vars.get("x"), {1}, {25}));
}

TEST(SquaredL2Norm, InfersOneElementAndRefusesNonFp32) {
  EXPECT_EQ(infer(unary_op("squared_l2_norm"), {{"x", {pe::dtype::fp32, {-1, 7, 3}}}}).at("out").dims,
            (shape_t{1}));
  const std::string message =
      infer_error(unary_op("squared_l2_norm"), {{"x", {pe::dtype::int64, {2, 2}}}});
  EXPECT_TRUE(contains(message, "op #0 (squared_l2_norm)") &&
              contains(message, "X must be FP32, got INT64"))
      << message;
}

TEST(SquaredL2Norm, GradReadsXAsPaddle) {
  const auto grad = grad_of("squared_l2_norm");
  EXPECT_EQ(grad.type(), "squared_l2_norm_grad");
  EXPECT_EQ(pe::input_args(grad, "X"), std::vector<std::string>{"x"});
  EXPECT_TRUE(pe::input_args(grad, "Out").empty());
  EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grad, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(infer(grad, {{"x", {pe::dtype::fp32, {-1, 7}}}, {"out@GRAD", {pe::dtype::fp32, {1}}}})
                .at("x@GRAD")
                .dims,
            (shape_t{-1, 7}));
}

TEST(SquaredL2Norm, GradIsTwiceDoutTimesX) {
  pe::scope vars;
  vars.var("x") = values({1, -2, 0.5}, {3});
  vars.var("out@GRAD") = values({1.5}, {1});
  run_op(grad_of("squared_l2_norm"), vars);
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {3}, {3, -6, 1.5}));
  // Out@GRAD as Paddle 2.x's 0-D scalar is the same one value.
  vars.var("out@GRAD") = values({-1}, {});
  run_op(grad_of("squared_l2_norm"), vars);
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {3}, {-2, 4, -1}));
}

TEST(SquaredL2Norm, GradRefusesOutGradOfOtherDims) {
  pe::scope vars;
  vars.var("x") = values({1, 2}, {2});
  vars.var("out@GRAD") = values({1, 1}, {2});
  const std::string message = error_of(grad_of("squared_l2_norm"), vars);
  EXPECT_TRUE(contains(message, "squared_l2_norm_grad") &&
              contains(message, "Out@GRAD has dims [2], expected [1]"))
      << message;
}

TEST(SquaredL2NormGrad, MatchesCentralDifferences) {
  // Out is quadratic in X, so the central difference is exact for any delta: a large one
  // keeps Out's FP32 rounding (Out sums every square) out of the numeric gradient.
  for (const shape_t& dims : {shape_t{7}, shape_t{3, 4}, shape_t{2, 3, 5}}) {
    SCOPED_TRACE(pe::to_string(dims));
    EXPECT_TRUE(gradient_matches({.op_type = "squared_l2_norm",
                                  .inputs = {{"X", {random_tensor(dims, 32, -2.f, 2.f)}}},
                                  .attrs = {},
                                  .check_slots = {"X"},
                                  .delta = 0.05f}));
  }
}

} // namespace

// leaky_relu, gelu, softmax, log_softmax: forward values on hand-computed cases, grad makers,
// shape inference, the errors users see, and gradients against central differences.
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

pe::proto::OpDesc unary_op(const std::string& type, const attr_list& attrs = {}) {
  return make_op(type, {{"X", "x"}}, {{"Out", "out"}}, attrs);
}

/// Out of `type` over X = x.
tensor forward(const std::string& type, const tensor& x, const attr_list& attrs = {}) {
  pe::scope vars;
  vars.var("x") = x.clone();
  run_op(unary_op(type, attrs), vars);
  return vars.get("out");
}

::testing::AssertionResult tensor_near(const tensor& t, const shape_t& dims,
                                       const std::vector<double>& expected) {
  if (t.shape() != dims)
    return ::testing::AssertionFailure()
           << "dims " << pe::to_string(t.shape()) << ", expected " << pe::to_string(dims);
  auto got = t.values<float>();
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (std::abs(got[i] - expected[i]) > 1e-6 * (1 + std::abs(expected[i])))
      return ::testing::AssertionFailure()
             << "element " << i << " is " << got[i] << ", expected " << expected[i];
  return ::testing::AssertionSuccess();
}

const tensor sample = tensor::from_vector<float>({-1, 0.5, 2, -0.25}, {2, 2});

TEST(LeakyRelu, ScalesNegativesByAlpha) {
  EXPECT_TRUE(tensor_near(forward("leaky_relu", sample), {2, 2}, {-0.02, 0.5, 2, -0.005}));
  EXPECT_TRUE(tensor_near(forward("leaky_relu", sample, {{"alpha", 0.1f}}), {2, 2},
                          {-0.1, 0.5, 2, -0.025}));
}

TEST(Gelu, ErfAndTanhForms) {
  // x * Phi(x) with Phi from the standard normal CDF, and Paddle's tanh approximation.
  EXPECT_TRUE(tensor_near(forward("gelu", sample), {2, 2},
                          {-0.15865525393145707, 0.34573123063700656, 1.9544997361036416,
                           -0.10032341857926907}));
  EXPECT_TRUE(tensor_near(forward("gelu", sample, {{"approximate", true}}), {2, 2},
                          {-0.15880800939172324, 0.34571400982514394, 1.954597694087775,
                           -0.100324649298315}));
}

TEST(Activations, GradsReadXAsPaddle) {
  for (const char* type : {"leaky_relu", "gelu"}) {
    const auto grad = pe::op_registry::global().find(type)->make_grad(unary_op(type)).at(0);
    EXPECT_EQ(grad.type(), std::string(type) + "_grad");
    EXPECT_EQ(pe::input_args(grad, "X"), std::vector<std::string>{"x"});
    EXPECT_TRUE(pe::input_args(grad, "Out").empty());
    EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
    EXPECT_EQ(infer(grad, {{"x", {pe::dtype::fp32, {-1, 7}}}}).at("x@GRAD").dims,
              (shape_t{-1, 7}));
  }
}

TEST(ActivationsGrad, LeakyReluAndGelu) {
  // leaky_relu has a kink at 0: keep every input at least 0.1 away from it.
  tensor x = random_tensor({3, 4}, 21, -2.f, 2.f);
  for (float& v : x.values<float>()) v = std::copysign(0.1f + std::abs(v), v);
  EXPECT_TRUE(gradient_matches({.op_type = "leaky_relu",
                                .inputs = {{"X", {x}}},
                                .attrs = {{"alpha", 0.3f}},
                                .check_slots = {"X"}}));
  for (bool approximate : {false, true}) {
    SCOPED_TRACE(approximate ? "tanh form" : "erf form");
    EXPECT_TRUE(gradient_matches({.op_type = "gelu",
                                  .inputs = {{"X", {random_tensor({3, 4}, 22, -3.f, 3.f)}}},
                                  .attrs = {{"approximate", approximate}},
                                  .check_slots = {"X"}}));
  }
}

// --- softmax, log_softmax --------------------------------------------------------------

TEST(Softmax, NormalisesAlongAxis) {
  const float ln3 = std::log(3.f);
  const tensor x = tensor::from_vector<float>({0, 0, ln3, ln3, 0, 0}, {2, 3});
  // Along axis 0 each column holds {0, ln 3}, {0, 0} or {ln 3, 0}.
  const std::vector<double> columns = {0.25, 0.5, 0.75, 0.75, 0.5, 0.25};
  EXPECT_TRUE(tensor_near(forward("softmax", x, {{"axis", std::int32_t{0}}}), {2, 3}, columns));
  std::vector<double> log_columns;
  for (double p : columns) log_columns.push_back(std::log(p));
  EXPECT_TRUE(tensor_near(forward("log_softmax", x, {{"axis", std::int32_t{-2}}}), {2, 3},
                          log_columns));
  // Along the last axis each row holds {0, 0, ln 3} or {ln 3, 0, 0}: 1 + 1 + 3 = 5.
  EXPECT_TRUE(tensor_near(forward("softmax", x), {2, 3}, {0.2, 0.2, 0.6, 0.6, 0.2, 0.2}));
  EXPECT_TRUE(tensor_near(forward("log_softmax", x), {2, 3},
                          {std::log(0.2), std::log(0.2), std::log(0.6), std::log(0.6),
                           std::log(0.2), std::log(0.2)}));
}

TEST(Softmax, MiddleAxisOfRank3) {
  // X [2, 3, 2] = 0..11 along axis 1: lane (a, c) holds x = 6a + c + 2k, k < 3, whose
  // softmax is e^{2k} / (1 + e^2 + e^4) whatever a and c.
  std::vector<float> v(12);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const tensor x = tensor::from_vector(v, {2, 3, 2});
  const double z = 1 + std::exp(2.0) + std::exp(4.0);
  std::vector<double> expected, expected_log;
  for (int a = 0; a < 2; ++a)
    for (int k = 0; k < 3; ++k)
      for (int c = 0; c < 2; ++c) {
        expected.push_back(std::exp(2.0 * k) / z);
        expected_log.push_back(2.0 * k - std::log(z));
      }
  EXPECT_TRUE(tensor_near(forward("softmax", x, {{"axis", std::int32_t{1}}}), {2, 3, 2}, expected));
  EXPECT_TRUE(tensor_near(forward("log_softmax", x, {{"axis", std::int32_t{1}}}), {2, 3, 2},
                          expected_log));
}

TEST(Softmax, StaysFiniteForHugeInputs) {
  const tensor x = tensor::from_vector<float>({1000, 0}, {1, 2});
  EXPECT_TRUE(tensor_near(forward("softmax", x), {1, 2}, {1, 0}));
  EXPECT_TRUE(tensor_near(forward("log_softmax", x), {1, 2}, {0, -1000}));
}

TEST(Softmax, InPlaceOnX) {
  pe::scope vars;
  vars.var("x") = tensor::from_vector<float>({0, std::log(3.f)}, {2});
  run_op(make_op("softmax", {{"X", "x"}}, {{"Out", "x"}}), vars);
  EXPECT_TRUE(tensor_near(vars.get("x"), {2}, {0.25, 0.75}));
}

TEST(Softmax, GradsReadOutAsPaddle) {
  for (const char* type : {"softmax", "log_softmax"}) {
    const auto op = unary_op(type, {{"axis", std::int32_t{1}}});
    const auto grad = pe::op_registry::global().find(type)->make_grad(op).at(0);
    EXPECT_EQ(grad.type(), std::string(type) + "_grad");
    EXPECT_TRUE(pe::input_args(grad, "X").empty());
    EXPECT_EQ(pe::input_args(grad, "Out"), std::vector<std::string>{"out"});
    EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
    EXPECT_EQ(pe::output_args(grad, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
    EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "axis")), pe::attribute(std::int32_t{1}));
  }
}

TEST(Softmax, InfersShapesAndRejectsBadAxes) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 10}}},
                              {"s", {pe::dtype::fp32, {}}},
                              {"out", {pe::dtype::fp32, {-1, 10}}},
                              {"out@GRAD", {pe::dtype::fp32, {-1, 10}}}};
  for (const char* type : {"softmax", "log_softmax"}) {
    SCOPED_TRACE(type);
    EXPECT_EQ(infer(unary_op(type), vars).at("out").dims, (shape_t{-1, 10}));
    EXPECT_EQ(infer(unary_op(type, {{"axis", std::int32_t{-2}}}), vars).at("out").dims,
              (shape_t{-1, 10}));
    const auto grad = pe::op_registry::global().find(type)->make_grad(unary_op(type)).at(0);
    EXPECT_EQ(infer(grad, vars).at("x@GRAD").dims, (shape_t{-1, 10}));

    std::string message;
    try {
      infer(unary_op(type, {{"axis", std::int32_t{2}}}), vars);
    } catch (const pe::error& e) {
      message = e.what();
    }
    EXPECT_TRUE(contains(message, "op #0 (" + std::string(type) + ")") &&
                contains(message, "axis 2 is out of range for X of rank 2 (valid: [-2, 2))"))
        << message;
    EXPECT_THROW(infer(make_op(type, {{"X", "s"}}, {{"Out", "out"}}), vars), pe::error);
  }
}

TEST(Softmax, KernelRejectsBadAxis) {
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {2, 3});
  const std::string message = error_of(unary_op("log_softmax", {{"axis", std::int32_t{-3}}}), vars);
  EXPECT_TRUE(contains(message, "log_softmax") &&
              contains(message, "axis -3 is out of range for X of rank 2"))
      << message;
}

TEST(SoftmaxGrad, EveryAxis) {
  for (const char* type : {"softmax", "log_softmax"})
    for (std::int32_t axis : {-1, 0, 1, 2}) {
      SCOPED_TRACE(std::string(type) + " axis " + std::to_string(axis));
      EXPECT_TRUE(gradient_matches({.op_type = type,
                                    .inputs = {{"X", {random_tensor({2, 3, 4}, 23, -2.f, 2.f)}}},
                                    .attrs = {{"axis", axis}},
                                    .check_slots = {"X"}}));
    }
}

} // namespace

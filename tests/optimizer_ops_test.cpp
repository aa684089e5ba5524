// sgd, momentum, adam: updates against Paddle's formulas computed here in double, in place
// (ParamOut is the variable Param) as programs use them, and the errors users see.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "graph/exec/bound_op.hpp"
#include "graph/exec/scope.hpp"
#include "graph/attributes.hpp"
#include "graph/op_registry.hpp"
#include "tests/support/op_test.hpp"

namespace {

using pe::tensor;
using pe::testing::attr_list;
using pe::testing::error_of;
using pe::testing::infer;
using pe::testing::make_op;
using pe::testing::slot_vars;

std::vector<double> as_double(const tensor& t) {
  auto v = t.values<float>();
  return {v.begin(), v.end()};
}

void expect_near(const tensor& actual, const std::vector<double>& expected, double tolerance) {
  auto a = as_double(actual);
  ASSERT_EQ(a.size(), expected.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], expected[i], tolerance * std::max(1.0, std::abs(expected[i]))) << i;
}

const std::vector<float> param0 = {0.5f, -1.25f, 2.f, 0.f, 3.5f, -0.75f};
const std::vector<float> grads[3] = {{0.1f, -0.2f, 0.3f, -0.4f, 0.5f, 0.f},
                                     {-0.3f, 0.25f, 0.05f, 0.6f, -0.1f, 0.2f},
                                     {0.2f, 0.2f, -0.7f, 0.1f, 0.f, -0.5f}};

/// A scope with w = param0 [2, 3], g = grads[0], lr = [learning_rate].
pe::scope optimizer_scope(float learning_rate) {
  pe::scope vars;
  vars.var("w") = tensor::from_vector(param0, {2, 3});
  vars.var("g") = tensor::from_vector(grads[0], {2, 3});
  vars.var("lr") = tensor::from_vector<float>({learning_rate}, {1});
  return vars;
}

TEST(Sgd, UpdatesParamInPlace) {
  pe::scope vars = optimizer_scope(0.1f);
  const void* storage = vars.get("w").raw();
  pe::bound_op(make_op("sgd", {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}},
                       {{"ParamOut", "w"}}),
               vars, pe::place::cpu(), 0)
      .run();
  std::vector<double> expected;
  for (std::size_t i = 0; i < param0.size(); ++i)
    expected.push_back(double{param0[i]} - 0.1 * double{grads[0][i]});
  expect_near(vars.get("w"), expected, 1e-6);
  EXPECT_EQ(vars.get("w").raw(), storage);
}

TEST(Sgd, WritesASeparateParamOutLeavingParamIntact) {
  pe::scope vars = optimizer_scope(0.5f);
  pe::bound_op(make_op("sgd", {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}},
                       {{"ParamOut", "w2"}}),
               vars, pe::place::cpu(), 0)
      .run();
  std::vector<double> expected;
  for (std::size_t i = 0; i < param0.size(); ++i)
    expected.push_back(double{param0[i]} - 0.5 * double{grads[0][i]});
  expect_near(vars.get("w2"), expected, 1e-6);
  EXPECT_EQ(as_double(vars.get("w")), std::vector<double>(param0.begin(), param0.end()));
}

TEST(Sgd, RejectsGradOfAnotherShape) {
  pe::scope vars = optimizer_scope(0.1f);
  vars.var("g") = tensor::zeros(pe::dtype::fp32, {3, 2});
  std::string message =
      error_of(make_op("sgd", {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}},
                       {{"ParamOut", "w"}}),
               vars);
  EXPECT_NE(message.find("Grad is FP32 [3, 2] but Param is FP32 [2, 3]"), std::string::npos)
      << message;
}

TEST(Sgd, RejectsLearningRateThatIsNotAScalar) {
  pe::scope vars = optimizer_scope(0.1f);
  vars.var("lr") = tensor::zeros(pe::dtype::fp32, {2});
  std::string message =
      error_of(make_op("sgd", {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}},
                       {{"ParamOut", "w"}}),
               vars);
  EXPECT_NE(message.find("LearningRate must be one FP32 element, got FP32 [2]"),
            std::string::npos)
      << message;
}

/// Two in-place momentum steps against v = mu v + g; p -= lr (g + mu v) or lr v.
void check_momentum(bool nesterov) {
  const double lr = 0.05, mu = 0.9;
  pe::scope vars = optimizer_scope(static_cast<float>(lr));
  vars.var("v") = tensor::from_vector<float>({0.1f, 0.f, -0.2f, 0.3f, 0.f, 0.05f}, {2, 3});
  std::vector<double> p(param0.begin(), param0.end()), v = as_double(vars.get("v"));
  pe::bound_op step(make_op("momentum",
                            {{"Param", "w"},
                             {"Grad", "g"},
                             {"Velocity", "v"},
                             {"LearningRate", "lr"}},
                            {{"ParamOut", "w"}, {"VelocityOut", "v"}},
                            {{"mu", static_cast<float>(mu)}, {"use_nesterov", nesterov}}),
                    vars, pe::place::cpu(), 0);
  for (int t = 0; t < 2; ++t) {
    vars.var("g").copy_from(tensor::from_vector(grads[t], {2, 3}));
    step.run();
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double g = grads[t][i];
      v[i] = mu * v[i] + g;
      p[i] -= lr * (nesterov ? g + mu * v[i] : v[i]);
    }
    expect_near(vars.get("v"), v, 1e-6);
    expect_near(vars.get("w"), p, 1e-6);
  }
}

TEST(Momentum, UpdatesParamAndVelocityInPlace) { check_momentum(false); }

TEST(Momentum, NesterovUpdatesParamAndVelocityInPlace) { check_momentum(true); }

TEST(Momentum, RequiresMu) {
  pe::scope vars = optimizer_scope(0.1f);
  vars.var("v") = tensor::zeros(pe::dtype::fp32, {2, 3});
  std::string message = error_of(
      make_op("momentum",
              {{"Param", "w"}, {"Grad", "g"}, {"Velocity", "v"}, {"LearningRate", "lr"}},
              {{"ParamOut", "w"}, {"VelocityOut", "v"}}),
      vars);
  EXPECT_NE(message.find("missing required attribute 'mu'"), std::string::npos) << message;
}

pe::proto::OpDesc adam_op(const attr_list& attrs) {
  return make_op("adam",
                 {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}, {"Moment1", "m1"},
                  {"Moment2", "m2"}, {"Beta1Pow", "b1p"}, {"Beta2Pow", "b2p"}},
                 {{"ParamOut", "w"}, {"Moment1Out", "m1"}, {"Moment2Out", "m2"},
                  {"Beta1PowOut", "b1p"}, {"Beta2PowOut", "b2p"}},
                 attrs);
}

TEST(Adam, ThreeInPlaceStepsFollowPaddlesFormula) {
  const double lr = 0.01, beta1 = 0.8, beta2 = 0.95, eps = 1e-6;
  pe::scope vars = optimizer_scope(static_cast<float>(lr));
  vars.var("m1") = tensor::zeros(pe::dtype::fp32, {2, 3});
  vars.var("m2") = tensor::zeros(pe::dtype::fp32, {2, 3});
  vars.var("b1p") = tensor::from_vector<float>({static_cast<float>(beta1)}, {1});
  vars.var("b2p") = tensor::from_vector<float>({static_cast<float>(beta2)}, {1});
  pe::bound_op step(adam_op({{"beta1", static_cast<float>(beta1)},
                             {"beta2", static_cast<float>(beta2)},
                             {"epsilon", static_cast<float>(eps)}}),
                    vars, pe::place::cpu(), 0);

  std::vector<double> p(param0.begin(), param0.end()), m1(6, 0.0), m2(6, 0.0);
  double b1p = beta1, b2p = beta2;
  for (int t = 0; t < 3; ++t) {
    vars.var("g").copy_from(tensor::from_vector(grads[t], {2, 3}));
    step.run();
    const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double g = grads[t][i];
      m1[i] = beta1 * m1[i] + (1 - beta1) * g;
      m2[i] = beta2 * m2[i] + (1 - beta2) * g * g;
      p[i] -= lr_t * m1[i] / (std::sqrt(m2[i]) + eps * std::sqrt(1 - b2p));
    }
    b1p *= beta1;
    b2p *= beta2;
    expect_near(vars.get("m1"), m1, 1e-5);
    expect_near(vars.get("m2"), m2, 1e-5);
    expect_near(vars.get("w"), p, 1e-5);
    expect_near(vars.get("b1p"), {b1p}, 1e-6);
    expect_near(vars.get("b2p"), {b2p}, 1e-6);
  }
}

TEST(Adam, RejectsMomentOfAnotherShape) {
  pe::scope vars = optimizer_scope(0.1f);
  vars.var("m1") = tensor::zeros(pe::dtype::fp32, {6});
  vars.var("m2") = tensor::zeros(pe::dtype::fp32, {2, 3});
  vars.var("b1p") = tensor::from_vector<float>({0.9f}, {1});
  vars.var("b2p") = tensor::from_vector<float>({0.999f}, {1});
  std::string message = error_of(adam_op({}), vars);
  EXPECT_NE(message.find("Moment1 is FP32 [6] but Param is FP32 [2, 3]"), std::string::npos)
      << message;
}

TEST(Optimizers, InferShapesOfTheirStateOutputs) {
  pe::var_table vars = {{"w", {pe::dtype::fp32, {4, 3}}},   {"g", {pe::dtype::fp32, {4, 3}}},
                        {"lr", {pe::dtype::fp32, {1}}},     {"m1", {pe::dtype::fp32, {4, 3}}},
                        {"m2", {pe::dtype::fp32, {4, 3}}},  {"b1p", {pe::dtype::fp32, {1}}},
                        {"b2p", {pe::dtype::fp32, {1}}}};
  auto out = infer(adam_op({}), vars);
  EXPECT_EQ(out.at("w").dims, (pe::shape_t{4, 3}));
  EXPECT_EQ(out.at("m2").dims, (pe::shape_t{4, 3}));
  EXPECT_EQ(out.at("b1p").dims, (pe::shape_t{1}));

  vars["g"].dims = {3, 4};
  EXPECT_THROW(infer(adam_op({}), vars), pe::error);
  vars["g"].dims = {4, 3};
  vars["lr"].dims = {2};
  EXPECT_THROW(infer(make_op("sgd", {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}},
                             {{"ParamOut", "w"}}),
                     vars),
               pe::error);
}

} // namespace

// sgd, momentum, adam, adamw: updates against Paddle's formulas computed here in double, in
// place (ParamOut is the variable Param) as programs use them, weight decay as Paddle 2.6
// lowers it against numbers Paddle computed, and the errors users see.
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

using namespace pe::testing;
using pe::tensor;

void expect_near(const tensor& actual, const std::vector<double>& expected, double tolerance) {
  auto a = elements_of<float, double>(actual);
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

/// sgd on w, g and lr, its ParamOut bound to `param_out` (in place by default).
pe::proto::OpDesc sgd_op(const std::string& param_out = "w") {
  return make_op("sgd", {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}},
                 {{"ParamOut", param_out}});
}

/// param0 after one plain gradient step, param0 - lr * grad, in double.
std::vector<double> sgd_step(double lr, const std::vector<float>& grad) {
  std::vector<double> expected;
  for (std::size_t i = 0; i < param0.size(); ++i)
    expected.push_back(double{param0[i]} - lr * double{grad[i]});
  return expected;
}

TEST(Sgd, UpdatesParamInPlace) {
  pe::scope vars = optimizer_scope(0.1f);
  const void* storage = vars.get("w").raw();
  run_op(sgd_op(), vars);
  expect_near(vars.get("w"), sgd_step(0.1, grads[0]), 1e-6);
  EXPECT_EQ(vars.get("w").raw(), storage);
}

TEST(Sgd, WritesASeparateParamOutLeavingParamIntact) {
  pe::scope vars = optimizer_scope(0.5f);
  run_op(sgd_op("w2"), vars);
  expect_near(vars.get("w2"), sgd_step(0.5, grads[0]), 1e-6);
  EXPECT_EQ((elements_of<float, double>(vars.get("w"))),
            std::vector<double>(param0.begin(), param0.end()));
}

TEST(Sgd, RejectsGradOfAnotherShape) {
  pe::scope vars = optimizer_scope(0.1f);
  vars.var("g") = tensor::zeros(pe::dtype::fp32, {3, 2});
  std::string message = error_of(sgd_op(), vars);
  EXPECT_NE(message.find("Grad is FP32 [3, 2] but Param is FP32 [2, 3]"), std::string::npos)
      << message;
}

TEST(Sgd, RejectsLearningRateThatIsNotAScalar) {
  pe::scope vars = optimizer_scope(0.1f);
  vars.var("lr") = tensor::zeros(pe::dtype::fp32, {2});
  std::string message = error_of(sgd_op(), vars);
  EXPECT_NE(message.find("LearningRate must be one FP32 element, got FP32 [2]"),
            std::string::npos)
      << message;
}

/// Two in-place momentum steps against v = mu v + g; p -= lr (g + mu v) or lr v.
void check_momentum(bool nesterov) {
  const double lr = 0.05, mu = 0.9;
  pe::scope vars = optimizer_scope(static_cast<float>(lr));
  vars.var("v") = tensor::from_vector<float>({0.1f, 0.f, -0.2f, 0.3f, 0.f, 0.05f}, {2, 3});
  std::vector<double> p(param0.begin(), param0.end());
  std::vector<double> v = elements_of<float, double>(vars.get("v"));
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

/// Paddle's Adam in double from Param = param0 and zero moments: the moments, the beta
/// powers (starting at beta1 and beta2) and the parameter after each step.
struct adam_reference {
  double beta1, beta2, eps;
  std::vector<double> p{param0.begin(), param0.end()}, m1 = std::vector<double>(6, 0.0),
                                                       m2 = std::vector<double>(6, 0.0);
  double b1p = beta1, b2p = beta2;

  /// One step with `grad` at learning rate `lr`; Param is first multiplied by `decay`
  /// (AdamW's 1 - lr * coeff).
  void step(const std::vector<float>& grad, double lr, double decay = 1) {
    const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double g = grad[i];
      m1[i] = beta1 * m1[i] + (1 - beta1) * g;
      m2[i] = beta2 * m2[i] + (1 - beta2) * g * g;
      p[i] = p[i] * decay - lr_t * m1[i] / (std::sqrt(m2[i]) + eps * std::sqrt(1 - b2p));
    }
    b1p *= beta1;
    b2p *= beta2;
  }

  /// The op's state in `vars` (w, m1, m2, b1p, b2p) is this one.
  void expect_matches(const pe::scope& vars) const {
    expect_near(vars.get("m1"), m1, 1e-5);
    expect_near(vars.get("m2"), m2, 1e-5);
    expect_near(vars.get("w"), p, 1e-5);
    expect_near(vars.get("b1p"), {b1p}, 1e-6);
    expect_near(vars.get("b2p"), {b2p}, 1e-6);
  }

  /// Runs `op` (bound to `vars`, in place) with Grad = grads[t] for t < `steps`, stepping
  /// alike, and compares the state after each step.
  void expect_steps(pe::bound_op& op, pe::scope& vars, int steps, double lr, double decay = 1) {
    for (int t = 0; t < steps; ++t) {
      SCOPED_TRACE("step " + std::to_string(t + 1));
      vars.var("g").copy_from(tensor::from_vector(grads[t], {2, 3}));
      op.run();
      step(grads[t], lr, decay);
      expect_matches(vars);
    }
  }
};

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

  adam_reference{beta1, beta2, eps}.expect_steps(step, vars, 3, lr);
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
  EXPECT_THROW(infer(sgd_op(), vars), pe::error);
}

// --- weight decay as Paddle 2.6 lowers it --------------------------------------------
// Paddle's numbers below: one step of lr 0.1 from Param = param0 with Grad = paddle_grad,
// weight decay 0.01 (paddle.regularizer.L2Decay or a float).

const std::vector<float> paddle_grad = {0.2250000238418579f, 1.633333444595337f,
                                        0.41458335518836975f, 0.3875000476837158f,
                                        3.8083336353302f,     0.4593750238418579f};
/// Param after one L2-decayed SGD or momentum step: p - lr * (g + 0.01 p).
const std::vector<double> paddle_l2_step = {0.47699999809265137,  -1.412083387374878,
                                            1.956541657447815,    -0.03875000402331352,
                                            3.115666627883911,    -0.7951874732971191};

/// A scope with w = param0, g = paddle_grad, lr = 0.1 and, for momentum, v = 0.
pe::scope decay_scope() {
  pe::scope vars = optimizer_scope(0.1f);
  vars.var("g") = tensor::from_vector(paddle_grad, {2, 3});
  vars.var("v") = tensor::zeros(pe::dtype::fp32, {2, 3});
  return vars;
}

/// What Paddle appends before sgd and adam for L2Decay(coeff) on w: a scale of w and a sum
/// into w@GRAD (here g), in place.
void run_l2_decay_ops(pe::scope& vars, float coeff) {
  pe::testing::run_op(make_op("scale", {{"X", "w"}}, {{"Out", "decay"}},
                              {{"scale", coeff}, {"bias", 0.f}, {"bias_after_scale", true}}),
                      vars);
  auto sum = make_op("sum", {}, {{"Out", "g"}});
  pe::set_input(sum, "X", {"g", "decay"});
  pe::testing::run_op(sum, vars);
}

TEST(WeightDecay, SgdWithL2DecayOpsMatchesPaddle) {
  pe::scope vars = decay_scope();
  run_l2_decay_ops(vars, 0.01f);
  // Paddle's decayed gradient, g + 0.01 p.
  expect_near(vars.get("g"),
              {0.23000001907348633, 1.620833396911621, 0.4345833659172058, 0.3875000476837158,
               3.8433337211608887, 0.4518750309944153},
              1e-6);
  run_op(sgd_op(), vars);
  expect_near(vars.get("w"), paddle_l2_step, 1e-6);
}

pe::proto::OpDesc momentum_op(const attr_list& attrs) {
  return make_op("momentum",
                 {{"Param", "w"}, {"Grad", "g"}, {"Velocity", "v"}, {"LearningRate", "lr"}},
                 {{"ParamOut", "w"}, {"VelocityOut", "v"}}, attrs);
}

TEST(WeightDecay, MomentumRegularizationAttributesMatchPaddle) {
  pe::scope vars = decay_scope();
  pe::testing::run_op(momentum_op({{"mu", 0.9f},
                                   {"regularization_method", std::string("l2_decay")},
                                   {"regularization_coeff", 0.01f}}),
                      vars);
  expect_near(vars.get("w"), paddle_l2_step, 1e-6);
  // Paddle leaves Grad alone: the decay happens inside the op.
  expect_near(vars.get("g"), {paddle_grad.begin(), paddle_grad.end()}, 0);
}

TEST(WeightDecay, MomentumRescalesAndDecaysEveryStepWithNesterov) {
  const double lr = 0.1, mu = 0.9, coeff = 0.05, rescale = 0.5;
  pe::scope vars = decay_scope();
  pe::bound_op step(momentum_op({{"mu", static_cast<float>(mu)},
                                 {"use_nesterov", true},
                                 {"regularization_method", std::string("l2_decay")},
                                 {"regularization_coeff", static_cast<float>(coeff)},
                                 {"rescale_grad", static_cast<float>(rescale)}}),
                    vars, pe::place::cpu(), 0);
  std::vector<double> p(param0.begin(), param0.end()), v(6, 0.0);
  for (int t = 0; t < 2; ++t) {
    vars.var("g").copy_from(tensor::from_vector(grads[t], {2, 3}));
    step.run();
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double g = rescale * grads[t][i] + coeff * p[i];
      v[i] = mu * v[i] + g;
      p[i] -= lr * (g + mu * v[i]);
    }
    expect_near(vars.get("v"), v, 1e-6);
    expect_near(vars.get("w"), p, 1e-6);
  }
}

TEST(WeightDecay, MomentumWithoutRegularizationIgnoresTheCoefficient) {
  // Paddle writes regularization_coeff 0 then, but a stray coefficient must not apply.
  pe::scope vars = decay_scope();
  pe::testing::run_op(momentum_op({{"mu", 0.9f}, {"regularization_coeff", 0.5f}}), vars);
  expect_near(vars.get("w"), sgd_step(0.1, paddle_grad), 1e-6);
}

TEST(WeightDecay, MomentumRejectsOtherRegularizationAndMultiPrecision) {
  pe::scope vars = decay_scope();
  std::string message =
      error_of(momentum_op({{"mu", 0.9f}, {"regularization_method", std::string("l1_decay")}}),
               vars);
  EXPECT_NE(message.find("regularization_method must be \"\" or \"l2_decay\", got \"l1_decay\""),
            std::string::npos)
      << message;
  const pe::var_table declared = {{"w", {pe::dtype::fp32, {2, 3}}},
                                  {"g", {pe::dtype::fp32, {2, 3}}},
                                  {"v", {pe::dtype::fp32, {2, 3}}},
                                  {"lr", {pe::dtype::fp32, {1}}}};
  expect_error([&] { infer(momentum_op({{"mu", 0.9f}, {"multi_precision", true}}), declared); },
               {"multi_precision (FP32 master copies of FP16 parameters) is not supported"});
}

/// An adam or adamw op on w, g, lr, m1, m2, b1p, b2p, in place.
pe::proto::OpDesc adam_like_op(const std::string& type, const attr_list& attrs) {
  auto op = adam_op(attrs);
  op.set_type(type);
  return op;
}

/// decay_scope with zero moments and the powers at beta1 = 0.9, beta2 = 0.999.
pe::scope adam_scope() {
  pe::scope vars = decay_scope();
  vars.var("m1") = tensor::zeros(pe::dtype::fp32, {2, 3});
  vars.var("m2") = tensor::zeros(pe::dtype::fp32, {2, 3});
  vars.var("b1p") = tensor::from_vector<float>({0.9f}, {1});
  vars.var("b2p") = tensor::from_vector<float>({0.999f}, {1});
  return vars;
}

TEST(WeightDecay, AdamwDecaysOnlyWithDecayAsPaddle) {
  pe::scope vars = adam_scope();
  pe::testing::run_op(adam_like_op("adamw", {{"coeff", 0.01f}, {"with_decay", true}}), vars);
  // Paddle: p (1 - lr coeff) - lr_t m1 / (sqrt(m2) + eps_t), about p - 0.001 p - 0.1 sign(g).
  expect_near(vars.get("w"),
              {0.3995000123977661, -1.3487499952316284, 1.8980000019073486,
               -0.10000000149011612, 3.3965001106262207, -0.8492500185966492},
              1e-6);

  // Paddle's bias b: apply_decay_param_fun excluded it, so with_decay is false.
  pe::scope bias = adam_scope();
  bias.var("w") = tensor::from_vector<float>({0.1f, -0.2f, 0.3f}, {3});
  bias.var("g") = tensor::from_vector<float>({0.15000000596046448f, 2.2833335399627686f,
                                              -0.02916666865348816f},
                                             {3});
  bias.var("m1") = tensor::zeros(pe::dtype::fp32, {3});
  bias.var("m2") = tensor::zeros(pe::dtype::fp32, {3});
  pe::testing::run_op(adam_like_op("adamw", {{"coeff", 0.01f}, {"with_decay", false}}), bias);
  expect_near(bias.get("w"), {2.481238103868577e-09, -0.30000001192092896, 0.3999999761581421},
              1e-6);
}

TEST(WeightDecay, AdamwTwoStepsWithLrRatioFollowTheFormula) {
  const double lr = 0.1, ratio = 0.5, coeff = 0.2, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  pe::scope vars = adam_scope();
  pe::bound_op step(adam_like_op("adamw", {{"coeff", static_cast<float>(coeff)},
                                           {"with_decay", true},
                                           {"lr_ratio", static_cast<float>(ratio)}}),
                    vars, pe::place::cpu(), 0);
  adam_reference{beta1, beta2, eps}.expect_steps(step, vars, 2, lr * ratio, 1 - lr * ratio * coeff);
}

TEST(WeightDecay, AdamWithL2DecayOpsUsesTheDecayedGradient) {
  const double lr = 0.1, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, coeff = 0.01;
  pe::scope vars = adam_scope();
  run_l2_decay_ops(vars, static_cast<float>(coeff));
  pe::testing::run_op(adam_op({}), vars);
  const double lr_t = lr * std::sqrt(1 - beta2) / (1 - beta1);
  std::vector<double> expected;
  for (std::size_t i = 0; i < param0.size(); ++i) {
    const double g = double{paddle_grad[i]} + coeff * param0[i];
    const double m1 = (1 - beta1) * g, m2 = (1 - beta2) * g * g;
    expected.push_back(param0[i] - lr_t * m1 / (std::sqrt(m2) + eps * std::sqrt(1 - beta2)));
  }
  expect_near(vars.get("w"), expected, 1e-5);
}

TEST(Adam, SkipUpdateLeavesEveryStateAndGlobalBetaPowLeavesThePowers) {
  pe::scope vars = adam_scope();
  vars.var("skip") = tensor::from_vector<bool>({true}, {1});
  auto skipping = adam_op({});
  pe::set_input(skipping, "SkipUpdate", {"skip"});
  pe::testing::run_op(skipping, vars);
  expect_near(vars.get("w"), {param0.begin(), param0.end()}, 0);
  expect_near(vars.get("m1"), std::vector<double>(6, 0.0), 0);
  expect_near(vars.get("b1p"), {0.9f}, 0);

  pe::testing::run_op(adam_op({{"use_global_beta_pow", true}}), vars);
  expect_near(vars.get("b1p"), {0.9f}, 0);
  expect_near(vars.get("b2p"), {0.999f}, 0);
  EXPECT_NE((elements_of<float, double>(vars.get("w"))),
            std::vector<double>(param0.begin(), param0.end()));
}

TEST(Adam, BetaTensorsOverrideTheAttributes) {
  pe::scope by_tensor = adam_scope(), by_attr = adam_scope();
  by_tensor.var("beta1") = tensor::from_vector<float>({0.5f}, {1});
  auto op = adam_op({});
  pe::set_input(op, "Beta1Tensor", {"beta1"});
  pe::testing::run_op(op, by_tensor);
  pe::testing::run_op(adam_op({{"beta1", 0.5f}}), by_attr);
  EXPECT_EQ(elements_of<float>(by_tensor.get("m1")), elements_of<float>(by_attr.get("m1")));
  EXPECT_EQ(elements_of<float>(by_tensor.get("b1p")), elements_of<float>(by_attr.get("b1p")));
}

TEST(Adamw, InfersLikeAdamWithPaddlesDefaults) {
  const pe::var_table vars = {{"w", {pe::dtype::fp32, {4, 3}}},  {"g", {pe::dtype::fp32, {4, 3}}},
                              {"lr", {pe::dtype::fp32, {1}}},    {"m1", {pe::dtype::fp32, {4, 3}}},
                              {"m2", {pe::dtype::fp32, {4, 3}}}, {"b1p", {pe::dtype::fp32, {1}}},
                              {"b2p", {pe::dtype::fp32, {1}}}};
  const auto op = adam_like_op("adamw", {});
  auto out = infer(op, vars);
  EXPECT_EQ(out.at("w").dims, (pe::shape_t{4, 3}));
  EXPECT_EQ(out.at("b2p").dims, (pe::shape_t{1}));
  const auto attrs = pe::resolve_attributes(op, *pe::op_registry::global().find("adamw"));
  EXPECT_EQ(attrs.get<float>("coeff"), 0.01f);
  EXPECT_EQ(attrs.get<float>("lr_ratio"), 1.f);
  EXPECT_FALSE(attrs.get<bool>("with_decay"));
}

} // namespace

// elementwise_max, elementwise_min, elementwise_pow: forward values with Y broadcast at an
// axis, Paddle's gradient rules (max: X where X > Y, Y where X <= Y; min: X where X < Y, Y
// where X >= Y; pow: Y X^(Y-1) and ln(X) X^Y), the grad makers, shape inference, the errors
// users see, and gradients against central differences.
#include <cmath>
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

/// Runs `type` and its grad ops over X = x, Y = y and Out@GRAD = dout; the variables after.
pe::scope run_with_grads(const std::string& type, const tensor& x, const tensor& y, const tensor& dout,
                         const attr_list& attrs = {}) {
  pe::scope vars;
  vars.var("x") = x.clone();
  vars.var("y") = y.clone();
  vars.var("out@GRAD") = dout.clone();
  const auto op = binary_op(type, attrs);
  run_op(op, vars);
  for (const auto& g : pe::op_registry::global().find(type)->make_grad(op)) run_op(g, vars);
  return vars;
}

// X [2, 3] against Y [3] broadcast over rows, with a tie at (0, 1); Out@GRAD = 1..6.
const tensor x23 = values({1, 5, -2, 4, 0, 3}, {2, 3});
const tensor y3 = values({2, 5, -3}, {3});
const tensor dout23 = values({1, 2, 3, 4, 5, 6}, {2, 3});

TEST(ElementwiseMax, ValuesAndGradsTiesToY) {
  pe::scope vars = run_with_grads("elementwise_max", x23, y3, dout23);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 3}, {2, 5, -2, 4, 5, 3}));
  // X@GRAD where X > Y; Y@GRAD sums Out@GRAD where X <= Y (the tie 5 = 5 goes to Y).
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {2, 3}, {0, 0, 3, 4, 0, 6}));
  EXPECT_TRUE(tensor_is(vars.get("y@GRAD"), {3}, {1, 2 + 5, 0}));
}

TEST(ElementwiseMin, ValuesAndGradsTiesToY) {
  pe::scope vars = run_with_grads("elementwise_min", x23, y3, dout23);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 3}, {1, 5, -3, 2, 0, -3}));
  // X@GRAD where X < Y; Y@GRAD sums Out@GRAD where X >= Y (the tie goes to Y).
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {2, 3}, {1, 0, 0, 0, 5, 0}));
  EXPECT_TRUE(tensor_is(vars.get("y@GRAD"), {3}, {4, 2, 3 + 6}));
}

TEST(ElementwisePow, ValuesAndGrads) {
  // X [2, 2] = 1..4, Y [2] = {2, 0.5} along the last axis; Out@GRAD = 1.
  pe::scope vars = run_with_grads("elementwise_pow", values({1, 2, 3, 4}, {2, 2}), values({2, 0.5}, {2}),
                                  values({1, 1, 1, 1}, {2, 2}));
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 2}, {1, std::sqrt(2.f), 9, 2}));
  // X@GRAD = Y X^(Y-1); Y@GRAD = the column sums of ln(X) X^Y.
  EXPECT_TRUE(tensor_is(vars.get("x@GRAD"), {2, 2}, {2, 0.5f / std::sqrt(2.f), 6, 0.25}));
  EXPECT_TRUE(tensor_is(vars.get("y@GRAD"), {2},
                        {9 * std::log(3.f), std::log(2.f) * std::sqrt(2.f) + 2 * std::log(4.f)}));
}

TEST(ElementwisePow, YAtAnAxis) {
  // X [2, 3] = 0..5, Y [2] at axis 0: row a is raised to Y[a].
  pe::scope vars;
  vars.var("x") = iota({2, 3});
  vars.var("y") = values({2, 3}, {2});
  run_op(binary_op("elementwise_pow", {{"axis", std::int32_t{0}}}), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 3}, {0, 1, 4, 27, 64, 125}));
}

TEST(ElementwiseMaxMinPow, GradMakersReadXAndYAsPaddle) {
  for (const char* type : {"elementwise_max", "elementwise_min", "elementwise_pow"}) {
    SCOPED_TRACE(type);
    const auto grads = pe::op_registry::global().find(type)->make_grad(binary_op(type, {{"axis", std::int32_t{1}}}));
    ASSERT_EQ(grads.size(), 1u);
    const auto& grad = grads[0];
    EXPECT_EQ(grad.type(), std::string(type) + "_grad");
    EXPECT_EQ(pe::input_args(grad, "X"), std::vector<std::string>{"x"});
    EXPECT_EQ(pe::input_args(grad, "Y"), std::vector<std::string>{"y"});
    EXPECT_TRUE(pe::input_args(grad, "Out").empty());
    EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
    EXPECT_EQ(pe::output_args(grad, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
    EXPECT_EQ(pe::output_args(grad, "Y@GRAD"), std::vector<std::string>{"y@GRAD"});
    EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "axis")), pe::attribute(std::int32_t{1}));
  }
}

TEST(ElementwiseMaxMinPow, InferShapesAndRefuseBadOnes) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 3, 4}}},
                              {"y", {pe::dtype::fp32, {3}}},
                              {"z", {pe::dtype::fp32, {4, 3}}},
                              {"i", {pe::dtype::int64, {-1, 3, 4}}},
                              {"out@GRAD", {pe::dtype::fp32, {-1, 3, 4}}}};
  for (const char* type : {"elementwise_max", "elementwise_min", "elementwise_pow"}) {
    SCOPED_TRACE(type);
    const auto op = binary_op(type, {{"axis", std::int32_t{1}}});
    EXPECT_EQ(infer(op, vars).at("out").dims, (shape_t{-1, 3, 4}));
    const auto grads = infer(pe::op_registry::global().find(type)->make_grad(op).at(0), vars);
    EXPECT_EQ(grads.at("x@GRAD").dims, (shape_t{-1, 3, 4}));
    EXPECT_EQ(grads.at("y@GRAD").dims, (shape_t{3}));

    std::string message = infer_error(make_op(type, {{"X", "x"}, {"Y", "z"}}, {{"Out", "out"}}), vars);
    EXPECT_TRUE(contains(message, "op #0 (" + std::string(type) + ")") &&
                contains(message, "X [-1, 3, 4], Y [4, 3], axis -1"))
        << message;
    message = infer_error(make_op(type, {{"X", "i"}, {"Y", "y"}}, {{"Out", "out"}}), vars);
    EXPECT_TRUE(contains(message, "X must be FP32, got INT64")) << message;

    pe::scope scope_vars;
    scope_vars.var("x") = iota({2, 3});
    scope_vars.var("y") = iota({2});
    message = error_of(binary_op(type), scope_vars);
    EXPECT_TRUE(contains(message, type) && contains(message, "X [2, 3], Y [2], axis -1")) << message;
  }
}

struct broadcast {
  shape_t x, y;
  std::int32_t axis;
};
const std::vector<broadcast> broadcasts = {{{2, 3}, {2, 3}, -1}, {{2, 3, 4}, {3}, 1}, {{2, 3, 4}, {3, 1}, -1},
                                           {{2, 3, 4}, {4}, -1}, {{2, 3, 4}, {2}, 0}};

/// `t`'s values on the grid k / 2 + offset: X on quarter points and Y on halves never tie
/// nor come within 0.25 of each other, away from max's and min's kinks.
tensor on_grid(tensor t, float offset) {
  for (float& v : t.values<float>()) v = std::round(v * 2.f) / 2.f + offset;
  return t;
}

TEST(ElementwiseMaxMinPowGrad, AllBroadcasts) {
  for (const broadcast& b : broadcasts) {
    SCOPED_TRACE("X " + pe::to_string(b.x) + " Y " + pe::to_string(b.y));
    for (const char* type : {"elementwise_max", "elementwise_min"}) {
      SCOPED_TRACE(type);
      EXPECT_TRUE(gradient_matches({.op_type = type,
                                    .inputs = {{"X", {on_grid(random_tensor(b.x, 51, -2.f, 2.f), 0.25f)}},
                                               {"Y", {on_grid(random_tensor(b.y, 52, -2.f, 2.f), 0.f)}}},
                                    .attrs = {{"axis", b.axis}},
                                    .check_slots = {"X", "Y"}}));
    }
    // X positive: ln(X) and fractional powers are defined.
    EXPECT_TRUE(gradient_matches({.op_type = "elementwise_pow",
                                  .inputs = {{"X", {random_tensor(b.x, 53, 0.5f, 2.f)}},
                                             {"Y", {random_tensor(b.y, 54, -1.5f, 1.5f)}}},
                                  .attrs = {{"axis", b.axis}},
                                  .check_slots = {"X", "Y"}}));
  }
}

} // namespace

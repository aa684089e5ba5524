// The condition ops: comparisons (less_than, less_equal, greater_than, greater_equal, equal,
// not_equal) and logical ops (logical_not, _and, _or, _xor) write BOOL, broadcast by Paddle's
// rule from the operand of higher rank (Y [] against X [1], as Paddle's in-graph schedules
// compare), over FP32, INT64 and INT32; shape inference; and the errors users see.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph/exec/scope.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::dtype;
using pe::shape_t;
using pe::tensor;

/// Out of `type` over X = `x`, Y = `y`, as 0/1 ints.
std::vector<int> run_binary(const std::string& type, const tensor& x, const tensor& y,
                            const attr_list& attrs = {}) {
  pe::scope vars;
  vars.var("x") = x.clone();
  vars.var("y") = y.clone();
  run_op(binary_op(type, attrs), vars);
  const tensor& out = vars.get("out");
  EXPECT_EQ(out.type(), dtype::boolean);
  return elements_of<bool, int>(out);
}

TEST(ConditionOps, ComparisonsElementwise) {
  const tensor x = values({1, 2, 3}, {3});
  const tensor y = values({2, 2, 2}, {3});
  EXPECT_EQ(run_binary("less_than", x, y), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(run_binary("less_equal", x, y), (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(run_binary("greater_than", x, y), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(run_binary("greater_equal", x, y), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(run_binary("equal", x, y), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(run_binary("not_equal", x, y), (std::vector<int>{1, 0, 1}));
}

TEST(ConditionOps, IntegersAndBroadcastFromEitherSide) {
  const tensor steps = tensor::from_vector<std::int64_t>({0, 3, 5, 9}, {4});
  const tensor five = tensor::from_vector<std::int64_t>({5}, {}); // a 0-D Y, as Paddle's schedules
  EXPECT_EQ(run_binary("less_than", steps, five), (std::vector<int>{1, 1, 0, 0}));
  // X of lower rank: Out has Y's dims, X is the one broadcast, the order of operands kept.
  EXPECT_EQ(run_binary("less_than", five, steps), (std::vector<int>{0, 0, 0, 1}));
  const tensor rows = tensor::from_vector<std::int32_t>({1, 2, 3, 4}, {2, 2});
  const tensor col = tensor::from_vector<std::int32_t>({2, 3}, {2});
  EXPECT_EQ(run_binary("greater_equal", rows, col, {{"axis", std::int32_t{0}}}), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(run_binary("greater_equal", rows, col), (std::vector<int>{0, 0, 1, 1}));
}

TEST(ConditionOps, FloatEqualityHasPaddlesTolerance) {
  EXPECT_EQ(run_binary("equal", values({1.f, 1.f}, {2}), values({1.f + 1e-9f, 1.001f}, {2})),
            (std::vector<int>{1, 0}));
}

TEST(ConditionOps, LogicalOps) {
  const tensor a = tensor::from_vector<bool>({true, true, false, false}, {4});
  const tensor b = tensor::from_vector<bool>({true, false, true, false}, {4});
  EXPECT_EQ(run_binary("logical_and", a, b), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(run_binary("logical_or", a, b), (std::vector<int>{1, 1, 1, 0}));
  EXPECT_EQ(run_binary("logical_xor", a, b), (std::vector<int>{0, 1, 1, 0}));
  pe::scope vars;
  vars.var("x") = values({0.f, 2.f, -1.f}, {3}); // nonzero is true
  run_op(make_op("logical_not", {{"X", "x"}}, {{"Out", "out"}}), vars);
  EXPECT_EQ((elements_of<bool, int>(vars.get("out"))), (std::vector<int>{1, 0, 0}));
  vars.var("x") = a.clone(); // in place too
  run_op(make_op("logical_not", {{"X", "x"}}, {{"Out", "x"}}), vars);
  EXPECT_EQ((elements_of<bool, int>(vars.get("x"))), (std::vector<int>{0, 0, 1, 1}));
}

TEST(ConditionOps, ShapeInference) {
  const auto out = infer(binary_op("less_than"), {{"x", {dtype::fp32, {-1, 1}}}, {"y", {dtype::fp32, {}}}});
  EXPECT_EQ(out.at("out").type, dtype::boolean);
  EXPECT_EQ(out.at("out").dims, (shape_t{-1, 1}));
  EXPECT_EQ(infer(binary_op("equal"), {{"x", {dtype::int64, {}}}, {"y", {dtype::int64, {3}}}}).at("out").dims,
            (shape_t{3}));
  EXPECT_EQ(infer(make_op("logical_not", {{"X", "x"}}, {{"Out", "out"}}), {{"x", {dtype::boolean, {2, 2}}}})
                .at("out").dims,
            (shape_t{2, 2}));
}

TEST(ConditionOps, Errors) {
  EXPECT_NE(infer_error(binary_op("less_than"), {{"x", {dtype::fp32, {1}}}, {"y", {dtype::int64, {1}}}})
                .find("X is FP32 but Y is INT64; both must have one dtype"),
            std::string::npos);
  EXPECT_NE(infer_error(binary_op("less_than"), {{"x", {dtype::fp32, {2, 3}}}, {"y", {dtype::fp32, {4}}}})
                .find("does not match"),
            std::string::npos)
      << infer_error(binary_op("less_than"), {{"x", {dtype::fp32, {2, 3}}}, {"y", {dtype::fp32, {4}}}});
  pe::scope vars;
  vars.var("x") = values({1}, {1});
  vars.var("y") = tensor::from_vector<std::int32_t>({1}, {1});
  EXPECT_NE(error_of(binary_op("greater_than"), vars).find("X is FP32 but Y is INT32"), std::string::npos);
  pe::scope unset;
  unset.var("x") = values({1}, {1});
  unset.var("y");
  EXPECT_NE(error_of(binary_op("less_than"), unset).find("'y' has no value"), std::string::npos)
      << error_of(binary_op("less_than"), unset);
}

} // namespace

// cumsum: running sums along an axis (exclusive, reverse, flatten), in place, Paddle's grad
// maker (a cumsum of Out@GRAD with reverse flipped), shape inference, the errors users see,
// and gradients against central differences.
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

pe::proto::OpDesc cumsum_op(const attr_list& attrs = {}) {
  return make_op("cumsum", {{"X", "x"}}, {{"Out", "out"}}, attrs);
}

/// cumsum's Out over X = `x`.
tensor forward(const tensor& x, const attr_list& attrs) {
  pe::scope vars;
  vars.var("x") = x.clone();
  run_op(cumsum_op(attrs), vars);
  return vars.get("out");
}

attr_list along(std::int32_t axis, bool exclusive = false, bool reverse = false) {
  return {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}};
}

TEST(Cumsum, RunningSumsAlongAnAxis) {
  const tensor x = iota({2, 3}); // {0, 1, 2}, {3, 4, 5}
  EXPECT_TRUE(tensor_is(forward(x, {}), {2, 3}, {0, 1, 3, 3, 7, 12})); // default axis -1
  EXPECT_TRUE(tensor_is(forward(x, along(0)), {2, 3}, {0, 1, 2, 3, 5, 7}));
  EXPECT_TRUE(tensor_is(forward(x, along(1, true)), {2, 3}, {0, 0, 1, 0, 3, 7}));
  EXPECT_TRUE(tensor_is(forward(x, along(1, false, true)), {2, 3}, {3, 3, 2, 12, 9, 5}));
  EXPECT_TRUE(tensor_is(forward(x, along(-1, true, true)), {2, 3}, {3, 2, 0, 9, 5, 0}));
  EXPECT_TRUE(tensor_is(forward(x, along(-2, true)), {2, 3}, {0, 0, 0, 0, 1, 2}));
  // flatten scans X as one row into [numel], whatever the axis.
  EXPECT_TRUE(tensor_is(forward(x, {{"flatten", true}, {"axis", std::int32_t{0}}}), {6},
                        {0, 1, 3, 6, 10, 15}));
}

TEST(Cumsum, MiddleAxisOfRank3) {
  // X [2, 3, 2] = 0..11 along axis 1: lane (a, c) holds 6a + c + 2k, k < 3.
  std::vector<float> expected(12);
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 2; ++c) {
      float acc = 0;
      for (int k = 0; k < 3; ++k) expected[(a * 3 + k) * 2 + c] = acc += static_cast<float>(6 * a + c + 2 * k);
    }
  EXPECT_TRUE(tensor_is(forward(iota({2, 3, 2}), along(1)), {2, 3, 2}, expected));
}

TEST(Cumsum, InPlaceOverX) {
  for (const bool exclusive : {false, true}) {
    pe::scope vars;
    vars.var("x") = iota({2, 3});
    run_op(make_op("cumsum", {{"X", "x"}}, {{"Out", "x"}}, along(1, exclusive, true)), vars);
    EXPECT_TRUE(tensor_is(vars.get("x"), {2, 3},
                          exclusive ? std::vector<float>{3, 2, 0, 9, 5, 0}
                                    : std::vector<float>{3, 3, 2, 12, 9, 5}));
  }
}

TEST(Cumsum, GradIsCumsumWithReverseFlipped) {
  for (const bool reverse : {false, true}) {
    const auto op = cumsum_op(along(0, true, reverse));
    const auto grads = pe::op_registry::global().find("cumsum")->make_grad(op);
    ASSERT_EQ(grads.size(), 1u);
    const auto& grad = grads[0];
    EXPECT_EQ(grad.type(), "cumsum");
    EXPECT_EQ(pe::input_args(grad, "X"), std::vector<std::string>{"out@GRAD"});
    EXPECT_EQ(pe::output_args(grad, "Out"), std::vector<std::string>{"x@GRAD"});
    EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "reverse")), pe::attribute(!reverse));
    EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "exclusive")), pe::attribute(true));
    EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "axis")), pe::attribute(std::int32_t{0}));
  }
  // Not given: reverse defaults to false, so the grad's is true.
  const auto grad = pe::op_registry::global().find("cumsum")->make_grad(cumsum_op()).at(0);
  EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "reverse")), pe::attribute(true));

  std::string message;
  try {
    pe::op_registry::global().find("cumsum")->make_grad(cumsum_op({{"flatten", true}}));
  } catch (const pe::error& e) {
    message = e.what();
  }
  EXPECT_TRUE(contains(message, "cumsum with flatten = true has no gradient")) << message;
}

TEST(Cumsum, InfersShapesAndRefusesBadAxis) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 3}}},
                              {"k", {pe::dtype::fp32, {2, 3}}},
                              {"i", {pe::dtype::int64, {2, 3}}},
                              {"b", {pe::dtype::boolean, {2, 3}}}};
  EXPECT_EQ(infer(cumsum_op(along(0)), vars).at("out").dims, (shape_t{-1, 3}));
  EXPECT_EQ(infer(cumsum_op({{"flatten", true}}), vars).at("out").dims, (shape_t{-1}));
  EXPECT_EQ(infer(make_op("cumsum", {{"X", "k"}}, {{"Out", "out"}}, {{"flatten", true}}), vars).at("out").dims,
            (shape_t{6}));
  std::string message = infer_error(cumsum_op(along(2)), vars);
  EXPECT_TRUE(contains(message, "op #0 (cumsum)") &&
              contains(message, "axis 2 is out of range for X of rank 2 (valid: [-2, 2))"))
      << message;
  // INT64 (position ids) scans in INT64; BOOL is refused.
  const auto ints_out = infer(make_op("cumsum", {{"X", "i"}}, {{"Out", "out"}}), vars);
  EXPECT_EQ(ints_out.at("out").type, pe::dtype::int64);
  EXPECT_EQ(ints_out.at("out").dims, (shape_t{2, 3}));
  message = infer_error(make_op("cumsum", {{"X", "b"}}, {{"Out", "out"}}), vars);
  EXPECT_TRUE(contains(message, "X must be FP32, INT64 or INT32, got BOOL")) << message;

  pe::scope scope_vars;
  scope_vars.var("x") = iota({2, 3});
  message = error_of(cumsum_op(along(-3)), scope_vars);
  EXPECT_TRUE(contains(message, "cumsum") && contains(message, "axis -3 is out of range for X of rank 2"))
      << message;
}

TEST(Cumsum, IntegersScanInTheirType) {
  // BERT's position ids: cumsum(ones_like(ids)) along the words, in INT64.
  pe::scope vars;
  vars.var("x") = tensor::from_vector<std::int64_t>({1, 1, 1, 1, 1, 1, 1, 1}, {2, 4});
  run_op(cumsum_op(), vars);
  EXPECT_EQ(vars.get("out").type(), pe::dtype::int64);
  EXPECT_EQ((elements_of<std::int64_t>(vars.get("out"))), (std::vector<std::int64_t>{1, 2, 3, 4, 1, 2, 3, 4}));
  // INT32, exclusive and reversed, past 2^24 where FP32 would round.
  vars.var("x") = tensor::from_vector<std::int32_t>({1 << 24, 1, 3}, {3});
  run_op(cumsum_op(along(0, true, true)), vars);
  EXPECT_EQ((elements_of<std::int32_t>(vars.get("out"))), (std::vector<std::int32_t>{4, 3, 0}));
  vars.var("x") = tensor::from_vector<std::int32_t>({1 << 24, 1, 3}, {3});
  run_op(cumsum_op(along(0)), vars);
  EXPECT_EQ((elements_of<std::int32_t>(vars.get("out"))), (std::vector<std::int32_t>{1 << 24, (1 << 24) + 1, (1 << 24) + 4}));
  // A dtype it does not scan is refused by the kernel too.
  vars.var("x") = tensor::zeros(pe::dtype::boolean, {3});
  EXPECT_TRUE(contains(error_of(cumsum_op(), vars), "X must be FP32, INT64 or INT32, got BOOL"));
}

TEST(CumsumGrad, MatchesCentralDifferences) {
  for (const std::int32_t axis : {0, 1, -1})
    for (const bool exclusive : {false, true})
      for (const bool reverse : {false, true}) {
        SCOPED_TRACE("axis " + std::to_string(axis) + (exclusive ? " exclusive" : "") +
                     (reverse ? " reverse" : ""));
        EXPECT_TRUE(gradient_matches({.op_type = "cumsum",
                                      .inputs = {{"X", {random_tensor({2, 4, 3}, 61)}}},
                                      .attrs = along(axis, exclusive, reverse),
                                      .check_slots = {"X"}}));
      }
}

} // namespace

// softmax_with_cross_entropy, top_k, top_k_v2, accuracy: forward values on hand-computed cases,
// gradients against central differences, shape inference, and the errors users see.
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
#include "tests/support/grad_check.hpp"

namespace {

using namespace pe::testing;
using pe::tensor;

pe::proto::OpDesc cross_entropy_op(const attr_list& attrs = {}) {
  return make_op("softmax_with_cross_entropy", {{"Logits", "x"}, {"Label", "y"}},
                 {{"Softmax", "sm"}, {"Loss", "loss"}}, attrs);
}

TEST(SoftmaxWithCrossEntropy, MatchesHandComputedValues) {
  pe::scope vars;
  vars.var("x") = tensor::from_vector<float>({1, 2, 3, 1, 1, 1}, {2, 3});
  vars.var("y") = tensor::from_vector<std::int64_t>({2, 0}, {2, 1});
  run_op(cross_entropy_op(), vars);

  // Row 0: softmax_j = e^j / (e + e^2 + e^3); loss = -log softmax_2 = log(1 + e^-1 + e^-2).
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const std::vector<double> expected_softmax = {std::exp(1.0) / z, std::exp(2.0) / z,
                                                std::exp(3.0) / z, 1 / 3., 1 / 3., 1 / 3.};
  auto softmax = elements_of<float>(vars.get("sm"));
  ASSERT_EQ(vars.get("sm").shape(), (pe::shape_t{2, 3}));
  for (std::size_t i = 0; i < softmax.size(); ++i)
    EXPECT_NEAR(softmax[i], expected_softmax[i], 1e-6) << i;
  ASSERT_EQ(vars.get("loss").shape(), (pe::shape_t{2, 1}));
  EXPECT_NEAR(elements_of<float>(vars.get("loss"))[0],
              std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
  EXPECT_NEAR(elements_of<float>(vars.get("loss"))[1], std::log(3.0), 1e-6);
}

TEST(SoftmaxWithCrossEntropy, StaysFiniteForHugeLogits) {
  pe::scope vars;
  vars.var("x") = tensor::from_vector<float>({1000, 0}, {1, 2});
  vars.var("y") = tensor::from_vector<std::int64_t>({1}, {1, 1});
  run_op(cross_entropy_op(), vars);
  EXPECT_NEAR(elements_of<float>(vars.get("loss"))[0], 1000.f, 1e-3);
  EXPECT_EQ(elements_of<float>(vars.get("sm")), (std::vector<float>{1.f, 0.f}));
}

TEST(SoftmaxWithCrossEntropy, IgnoredRowsHaveZeroLossAndGradient) {
  pe::scope vars;
  vars.var("x") = tensor::from_vector<float>({1, 2, 3, 4, 0, 0}, {3, 2});
  vars.var("y") = tensor::from_vector<std::int64_t>({7, 0, 7}, {3, 1});
  auto op = cross_entropy_op({{"ignore_index", std::int32_t{7}}});
  run_op(op, vars);
  auto loss = elements_of<float>(vars.get("loss"));
  EXPECT_EQ(loss[0], 0.f);
  EXPECT_NEAR(loss[1], std::log(1 + std::exp(1.0)), 1e-6); // -log(e^3 / (e^3 + e^4))
  EXPECT_EQ(loss[2], 0.f);

  vars.var("loss@GRAD") = tensor::from_vector<float>({2, 2, 2}, {3, 1});
  for (const auto& grad : pe::op_registry::global().find(op.type())->make_grad(op))
    run_op(grad, vars);
  auto g = elements_of<float>(vars.get("x@GRAD"));
  const double s0 = 1 / (1 + std::exp(1.0)); // softmax of row 1, class 0
  EXPECT_EQ(g[0], 0.f);
  EXPECT_EQ(g[1], 0.f);
  EXPECT_NEAR(g[2], 2 * (s0 - 1), 1e-6);
  EXPECT_NEAR(g[3], 2 * (1 - s0), 1e-6);
  EXPECT_EQ(g[4], 0.f);
  EXPECT_EQ(g[5], 0.f);
}

TEST(SoftmaxWithCrossEntropy, SoftLabelsWeighEveryClass) {
  pe::scope vars;
  vars.var("x") = tensor::from_vector<float>({0, std::log(3.f)}, {1, 2}); // softmax [1/4, 3/4]
  vars.var("y") = tensor::from_vector<float>({0.5f, 0.5f}, {1, 2});
  run_op(cross_entropy_op({{"soft_label", true}}), vars);
  EXPECT_NEAR(elements_of<float>(vars.get("loss"))[0],
              -0.5 * std::log(0.25) - 0.5 * std::log(0.75), 1e-6);
}

TEST(SoftmaxWithCrossEntropy, RejectsLabelOutOfRangeNamingValueAndRow) {
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {2, 5});
  vars.var("y") = tensor::from_vector<std::int64_t>({1, 5}, {2, 1});
  std::string message = error_of(cross_entropy_op(), vars);
  EXPECT_NE(message.find("Label value 5 in row 1 is outside [0, 5)"), std::string::npos)
      << message;

  vars.var("y") = tensor::from_vector<std::int64_t>({-3, 0}, {2, 1});
  message = error_of(cross_entropy_op(), vars);
  EXPECT_NE(message.find("Label value -3 in row 0"), std::string::npos) << message;
}

TEST(SoftmaxWithCrossEntropy, RejectsOtherAxesAndMismatchedLabels) {
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {2, 5});
  vars.var("y") = tensor::from_vector<std::int64_t>({1, 2}, {2, 1});
  std::string message = error_of(cross_entropy_op({{"axis", std::int32_t{0}}}), vars);
  EXPECT_NE(message.find("only the last axis is supported, got axis 0"), std::string::npos)
      << message;

  vars.var("y") = tensor::from_vector<std::int64_t>({1, 2, 3}, {3, 1});
  message = error_of(cross_entropy_op(), vars);
  EXPECT_NE(message.find("Label has shape [3, 1], expected [2, 1]"), std::string::npos)
      << message;
}

/// softmax_with_cross_entropy's Logits gradient against central differences, the loss
/// summed over Loss (Softmax bound as well, as programs bind it).
::testing::AssertionResult cross_entropy_gradient_matches(const tensor& logits, const tensor& label,
                                                          const attr_list& attrs = {}) {
  return gradient_matches({.op_type = "softmax_with_cross_entropy",
                           .inputs = {{"Logits", {logits}}, {"Label", {label}}},
                           .attrs = attrs,
                           .check_slots = {"Logits"},
                           .loss_outputs = {"Loss"},
                           .extra_outputs = {"Softmax"}});
}

TEST(SoftmaxWithCrossEntropy, GradientMatchesNumeric) {
  EXPECT_TRUE(cross_entropy_gradient_matches(random_tensor({4, 5}, 1, -2.f, 2.f),
                                             random_labels({4, 1}, 5, 2)));
}

TEST(SoftmaxWithCrossEntropy, GradientMatchesNumericWithIgnoredRowsAndRank3) {
  EXPECT_TRUE(cross_entropy_gradient_matches(
      random_tensor({2, 2, 4}, 3, -2.f, 2.f),
      tensor::from_vector<std::int64_t>({0, 2, 3, 2}, {2, 2, 1}),
      {{"ignore_index", std::int32_t{2}}}));
}

TEST(SoftmaxWithCrossEntropy, SoftLabelGradientMatchesNumeric) {
  EXPECT_TRUE(cross_entropy_gradient_matches(
      random_tensor({2, 3}, 4, -2.f, 2.f),
      tensor::from_vector<float>({0.2f, 0.3f, 0.5f, 0.6f, 0.4f, 0.f}, {2, 3}),
      {{"soft_label", true}}));
}

TEST(SoftmaxWithCrossEntropy, InfersShapesWithUnknownBatch) {
  auto op = cross_entropy_op();
  auto out = infer(op, {{"x", {pe::dtype::fp32, {-1, 10}}}, {"y", {pe::dtype::int64, {-1, 1}}}});
  EXPECT_EQ(out.at("sm").dims, (pe::shape_t{-1, 10}));
  EXPECT_EQ(out.at("loss").dims, (pe::shape_t{-1, 1}));
  EXPECT_EQ(out.at("loss").type, pe::dtype::fp32);

  auto grad = pe::op_registry::global().find(op.type())->make_grad(op).at(0);
  EXPECT_EQ(grad.type(), "softmax_with_cross_entropy_grad");
  auto grad_out = infer(grad, {{"y", {pe::dtype::int64, {-1, 1}}},
                               {"sm", {pe::dtype::fp32, {-1, 10}}},
                               {"loss@GRAD", {pe::dtype::fp32, {-1, 1}}}});
  EXPECT_EQ(grad_out.at("x@GRAD").dims, (pe::shape_t{-1, 10}));

  EXPECT_THROW(infer(op, {{"x", {pe::dtype::fp32, {-1, 10}}}, {"y", {pe::dtype::int64, {-1, 2}}}}),
               pe::error);
  EXPECT_THROW(infer(cross_entropy_op({{"axis", std::int32_t{0}}}),
                     {{"x", {pe::dtype::fp32, {-1, 10}}}, {"y", {pe::dtype::int64, {-1, 1}}}}),
               pe::error);
}

pe::proto::OpDesc top_k_op(std::int32_t k) {
  return make_op("top_k", {{"X", "x"}}, {{"Out", "out"}, {"Indices", "idx"}},
                 {{"k", k}});
}

TEST(TopK, PicksLargestWithLowerIndexFirstOnTies) {
  pe::scope vars;
  vars.var("x") = tensor::from_vector<float>({1, 3, 3, 2, 5, 4, 5, 5}, {2, 4});
  run_op(top_k_op(3), vars);
  ASSERT_EQ(vars.get("out").shape(), (pe::shape_t{2, 3}));
  EXPECT_EQ(elements_of<float>(vars.get("out")), (std::vector<float>{3, 3, 2, 5, 5, 5}));
  auto idx = vars.get("idx").values<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(idx.begin(), idx.end()),
            (std::vector<std::int64_t>{1, 2, 3, 0, 2, 3}));
}

TEST(TopK, RejectsKLargerThanRow) {
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {2, 4});
  std::string message = error_of(top_k_op(5), vars);
  EXPECT_NE(message.find("k = 5 must be in [1, 4]"), std::string::npos) << message;
  EXPECT_THROW(infer(top_k_op(5), {{"x", {pe::dtype::fp32, {-1, 4}}}}), pe::error);
}

TEST(TopK, InfersShapesWithUnknownBatch) {
  auto out = infer(top_k_op(2), {{"x", {pe::dtype::fp32, {-1, 3, 7}}}});
  EXPECT_EQ(out.at("out").dims, (pe::shape_t{-1, 3, 2}));
  EXPECT_EQ(out.at("idx").dims, (pe::shape_t{-1, 3, 2}));
  EXPECT_EQ(out.at("idx").type, pe::dtype::int64);
}

TEST(TopK, GradientMatchesNumeric) {
  // Distinct values at least 0.1 apart, so the +-delta perturbations never reorder them.
  std::vector<float> x = {0.3f, -0.5f, 0.9f, 0.1f,  -0.2f, 0.6f,
                          1.2f, -0.9f, 0.f,  0.4f, -1.1f, 0.7f};
  EXPECT_TRUE(pe::testing::gradient_matches({.op_type = "top_k",
                                              .inputs = {{"X", {tensor::from_vector(x, {3, 4})}}},
                                              .attrs = {{"k", std::int32_t{2}}},
                                              .check_slots = {"X"},
                                              .loss_outputs = {"Out"},
                                              .extra_outputs = {"Indices"}}));
}

pe::proto::OpDesc top_k_v2_op(const attr_list& attrs) {
  return make_op("top_k_v2", {{"X", "x"}}, {{"Out", "out"}, {"Indices", "idx"}}, attrs);
}

TEST(TopKV2, PicksAlongAxisLargestOrSmallest) {
  pe::scope vars;
  // Columns of X [3, 2]: {1, 3, 3} and {5, 4, 6}.
  vars.var("x") = tensor::from_vector<float>({1, 5, 3, 4, 3, 6}, {3, 2});
  run_op(top_k_v2_op({{"k", std::int32_t{2}}, {"axis", std::int32_t{0}}}), vars);
  ASSERT_EQ(vars.get("out").shape(), (pe::shape_t{2, 2}));
  EXPECT_EQ(elements_of<float>(vars.get("out")), (std::vector<float>{3, 6, 3, 5}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("idx")), (std::vector<std::int64_t>{1, 2, 2, 0}));

  run_op(top_k_v2_op({{"k", std::int32_t{2}}, {"axis", std::int32_t{-2}}, {"largest", false}}),
         vars);
  EXPECT_EQ(elements_of<float>(vars.get("out")), (std::vector<float>{1, 4, 3, 5}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("idx")), (std::vector<std::int64_t>{0, 1, 1, 0}));

  // Defaults: the last axis, largest first, as top_k.
  run_op(top_k_v2_op({}), vars);
  ASSERT_EQ(vars.get("out").shape(), (pe::shape_t{3, 1}));
  EXPECT_EQ(elements_of<float>(vars.get("out")), (std::vector<float>{5, 4, 6}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("idx")), (std::vector<std::int64_t>{1, 1, 1}));
}

TEST(TopKV2, InfersAndRejectsShapes) {
  auto out = infer(top_k_v2_op({{"k", std::int32_t{2}}, {"axis", std::int32_t{1}}}),
                   {{"x", {pe::dtype::fp32, {-1, 3, 7}}}});
  EXPECT_EQ(out.at("out").dims, (pe::shape_t{-1, 2, 7}));
  EXPECT_EQ(out.at("idx").dims, (pe::shape_t{-1, 2, 7}));
  EXPECT_EQ(out.at("idx").type, pe::dtype::int64);

  const auto too_big = top_k_v2_op({{"k", std::int32_t{4}}, {"axis", std::int32_t{1}}});
  std::string message;
  try {
    infer(too_big, {{"x", {pe::dtype::fp32, {-1, 3, 7}}}});
  } catch (const pe::error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("op #0 (top_k_v2): k = 4 exceeds dim 1 of X [-1, 3, 7]"),
            std::string::npos)
      << message;
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {2, 3, 7});
  message = error_of(too_big, vars);
  EXPECT_NE(message.find("k = 4 must be in [1, 3]"), std::string::npos) << message;
  message = error_of(top_k_v2_op({{"axis", std::int32_t{3}}}), vars);
  EXPECT_NE(message.find("axis 3 is out of range for X of rank 3"), std::string::npos) << message;

  vars.var("k") = tensor::zeros(pe::dtype::int32, {1});
  const auto with_k =
      make_op("top_k_v2", {{"X", "x"}, {"K", "k"}}, {{"Out", "out"}, {"Indices", "idx"}});
  message = error_of(with_k, vars);
  EXPECT_NE(message.find("the K input is not supported"), std::string::npos) << message;
  EXPECT_THROW(infer(with_k, {{"x", {pe::dtype::fp32, {2, 3}}}, {"k", {pe::dtype::int32, {1}}}}),
               pe::error);
}

TEST(TopKV2, GradientMatchesNumeric) {
  // 0.1 * a permutation of 0..23 over [2, 3, 4]: distinct values 0.1 apart, so the +-delta
  // perturbations never reorder them.
  std::vector<float> x;
  for (int i = 0; i < 24; ++i) x.push_back(0.1f * static_cast<float>((i * 7) % 24) - 1.f);
  for (const std::int32_t axis : {0, 1, -1})
    for (const bool largest : {true, false}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + (largest ? " largest" : " smallest"));
      EXPECT_TRUE(pe::testing::gradient_matches(
          {.op_type = "top_k_v2",
           .inputs = {{"X", {tensor::from_vector(x, {2, 3, 4})}}},
           .attrs = {{"k", std::int32_t{2}}, {"axis", axis}, {"largest", largest}},
           .check_slots = {"X"},
           .loss_outputs = {"Out"},
           .extra_outputs = {"Indices"}}));
    }
}

pe::proto::OpDesc accuracy_op() {
  return make_op("accuracy", {{"Out", "out"}, {"Indices", "idx"}, {"Label", "y"}},
                 {{"Accuracy", "acc"}, {"Correct", "correct"}, {"Total", "total"}});
}

/// A scope with accuracy_op's inputs: Out (top-k values, not read), Indices and Label.
pe::scope accuracy_scope(tensor out, tensor indices, tensor label) {
  pe::scope vars;
  vars.var("out") = std::move(out);
  vars.var("idx") = std::move(indices);
  vars.var("y") = std::move(label);
  return vars;
}

TEST(Accuracy, CountsRowsWhoseLabelIsAmongTopK) {
  pe::scope vars = accuracy_scope(tensor::zeros(pe::dtype::fp32, {3, 2}),
                                  tensor::from_vector<std::int64_t>({1, 2, 0, 3, 4, 1}, {3, 2}),
                                  tensor::from_vector<std::int64_t>({2, 1, 1}, {3, 1}));
  run_op(accuracy_op(), vars);
  EXPECT_FLOAT_EQ(elements_of<float>(vars.get("acc"))[0], 2.f / 3.f);
  EXPECT_EQ(vars.get("correct").values<std::int32_t>()[0], 2);
  EXPECT_EQ(vars.get("total").values<std::int32_t>()[0], 3);
}

TEST(Accuracy, EmptyBatchCountsZero) {
  pe::scope vars = accuracy_scope(tensor::zeros(pe::dtype::fp32, {0, 1}),
                                  tensor::zeros(pe::dtype::int64, {0, 1}),
                                  tensor::zeros(pe::dtype::int64, {0, 1}));
  run_op(accuracy_op(), vars);
  EXPECT_EQ(elements_of<float>(vars.get("acc"))[0], 0.f);
  EXPECT_EQ(vars.get("total").values<std::int32_t>()[0], 0);
}

TEST(Accuracy, RejectsLabelOfOtherBatch) {
  pe::scope vars = accuracy_scope(tensor::zeros(pe::dtype::fp32, {3, 2}),
                                  tensor::zeros(pe::dtype::int64, {3, 2}),
                                  tensor::zeros(pe::dtype::int64, {2, 1}));
  std::string message = error_of(accuracy_op(), vars);
  EXPECT_NE(message.find("Label has shape [2, 1], expected [3, 1]"), std::string::npos)
      << message;
}

TEST(Accuracy, InfersScalarOutputs) {
  auto out = infer(accuracy_op(), {{"out", {pe::dtype::fp32, {-1, 5}}},
                                   {"idx", {pe::dtype::int64, {-1, 5}}},
                                   {"y", {pe::dtype::int64, {-1, 1}}}});
  EXPECT_EQ(out.at("acc").dims, (pe::shape_t{1}));
  EXPECT_EQ(out.at("correct").type, pe::dtype::int32);
  EXPECT_EQ(out.at("total").type, pe::dtype::int32);
}


// --- cross-entropy of probabilities: cross_entropy, cross_entropy2, use_softmax = false ---
// Expected values from Paddle 2.6 on X = probs, Label = [2, 1, 0], ignore_index = 1 and
// Y@GRAD = [1, 2, 3]: Y = [-log 0.5, 0, -log 0.7], MatchX = [0.5, 0, 0.7] and
// X@GRAD = -Y@GRAD / MatchX at each label.

const std::vector<float> probs = {0.2f, 0.3f, 0.5f, 0.1f, 0.6f, 0.3f, 0.7f, 0.2f, 0.1f};
const std::vector<float> probs_grad = {0, 0, -2, 0, 0, 0, -4.285714149475098f, 0, 0};

pe::scope probability_scope() {
  pe::scope vars;
  vars.var("x") = tensor::from_vector(probs, {3, 3});
  vars.var("y") = tensor::from_vector<std::int64_t>({2, 1, 0}, {3, 1});
  return vars;
}

/// Runs the grad ops `op`'s grad maker emits, with the loss gradient `grad_var` = [1, 2, 3].
void run_grads(const pe::proto::OpDesc& op, const std::string& grad_var, pe::scope& vars) {
  vars.var(grad_var) = tensor::from_vector<float>({1, 2, 3}, {3, 1});
  for (const auto& grad : pe::op_registry::global().find(op.type())->make_grad(op))
    run_op(grad, vars);
}

TEST(CrossEntropy, MatchesPaddleWithIgnoredRow) {
  pe::scope vars = probability_scope();
  const auto op = make_op("cross_entropy", {{"X", "x"}, {"Label", "y"}}, {{"Y", "loss"}},
                          {{"ignore_index", std::int32_t{1}}});
  run_op(op, vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("loss"), {3, 1},
                                     {0.6931471824645996f, 0.f, 0.3566749691963196f}));
  run_grads(op, "loss@GRAD", vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("x@GRAD"), {3, 3}, probs_grad));
}

TEST(CrossEntropy, SoftLabelsAndZeroProbabilityAsPaddle) {
  pe::scope vars;
  vars.var("x") = tensor::from_vector<float>({0.25f, 0.75f, 0.f, 1.f}, {2, 2});
  vars.var("y") = tensor::from_vector<float>({0.5f, 0.5f, 1.f, 0.f}, {2, 2});
  run_op(make_op("cross_entropy", {{"X", "x"}, {"Label", "y"}}, {{"Y", "loss"}},
                 {{"soft_label", true}}),
         vars);
  // Row 1 has probability 0 for its label: Paddle clamps -log 0 to 1e20 rather than inf.
  auto loss = elements_of<float>(vars.get("loss"));
  EXPECT_NEAR(loss[0], -0.5 * std::log(0.25) - 0.5 * std::log(0.75), 1e-6);
  EXPECT_EQ(loss[1], 1e20f);
}

TEST(CrossEntropy, GradientMatchesNumericHardAndSoft) {
  const tensor x = pe::testing::random_tensor({4, 3}, 21, 0.2f, 1.f);
  EXPECT_TRUE(pe::testing::gradient_matches(
      {.op_type = "cross_entropy",
       .inputs = {{"X", {x}},
                  {"Label", {tensor::from_vector<std::int64_t>({0, 2, 1, 2}, {4, 1})}}},
       .attrs = {{"ignore_index", std::int32_t{1}}},
       .check_slots = {"X"},
       .loss_outputs = {"Y"}}));
  EXPECT_TRUE(pe::testing::gradient_matches(
      {.op_type = "cross_entropy",
       .inputs = {{"X", {x}}, {"Label", {pe::testing::random_tensor({4, 3}, 22, 0.f, 1.f)}}},
       .attrs = {{"soft_label", true}},
       .check_slots = {"X"},
       .loss_outputs = {"Y"}}));
}

pe::proto::OpDesc cross_entropy2_op() {
  return make_op("cross_entropy2", {{"X", "x"}, {"Label", "y"}},
                 {{"Y", "loss"}, {"XShape", "xshape"}, {"MatchX", "match"}},
                 {{"ignore_index", std::int32_t{1}}});
}

TEST(CrossEntropy2, MatchesPaddleWithMatchXAndXShape) {
  pe::scope vars = probability_scope();
  const auto op = cross_entropy2_op();
  run_op(op, vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("loss"), {3, 1},
                                     {0.6931471824645996f, 0.f, 0.3566749691963196f}));
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("match"), {3, 1}, {0.5f, 0.f, 0.7f}));
  EXPECT_EQ(vars.get("xshape").shape(), (pe::shape_t{3, 3, 0}));

  run_grads(op, "loss@GRAD", vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("x@GRAD"), {3, 3}, probs_grad));
}

TEST(CrossEntropy2, GradOpIsCrossEntropyGrad2WithPaddlesSlots) {
  const auto grads = pe::op_registry::global().find("cross_entropy2")->make_grad(cross_entropy2_op());
  ASSERT_EQ(grads.size(), 1u);
  const auto& g = grads[0];
  EXPECT_EQ(g.type(), "cross_entropy_grad2");
  EXPECT_EQ(pe::input_args(g, "MatchX"), std::vector<std::string>{"match"});
  EXPECT_EQ(pe::input_args(g, "XShape"), std::vector<std::string>{"xshape"});
  EXPECT_EQ(pe::input_args(g, "Label"), std::vector<std::string>{"y"});
  EXPECT_EQ(pe::input_args(g, "Y@GRAD"), std::vector<std::string>{"loss@GRAD"});
  EXPECT_TRUE(pe::input_args(g, "X").empty());
  EXPECT_EQ(pe::output_args(g, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(pe::resolve_attributes(g, *pe::op_registry::global().find("cross_entropy_grad2"))
                .get<std::int32_t>("ignore_index"),
            1);
}

TEST(CrossEntropy2, GradientMatchesNumericOnRank3) {
  EXPECT_TRUE(pe::testing::gradient_matches(
      {.op_type = "cross_entropy2",
       .inputs = {{"X", {pe::testing::random_tensor({2, 2, 4}, 23, 0.2f, 1.f)}},
                  {"Label", {tensor::from_vector<std::int64_t>({0, 3, 1, 2}, {2, 2, 1})}}},
       .attrs = {{"ignore_index", std::int32_t{1}}},
       .check_slots = {"X"},
       .loss_outputs = {"Y"},
       .extra_outputs = {"XShape", "MatchX"}}));
}

TEST(CrossEntropy2, InfersShapesWithUnknownBatch) {
  const auto op = cross_entropy2_op();
  auto out = infer(op, {{"x", {pe::dtype::fp32, {-1, 10}}}, {"y", {pe::dtype::int64, {-1, 1}}}});
  EXPECT_EQ(out.at("loss").dims, (pe::shape_t{-1, 1}));
  EXPECT_EQ(out.at("match").dims, (pe::shape_t{-1, 1}));
  EXPECT_EQ(out.at("xshape").dims, (pe::shape_t{-1, 10, 0}));

  const auto grad = pe::op_registry::global().find(op.type())->make_grad(op).at(0);
  auto grad_out = infer(grad, {{"y", {pe::dtype::int64, {-1, 1}}},
                               {"match", {pe::dtype::fp32, {-1, 1}}},
                               {"xshape", {pe::dtype::fp32, {-1, 10, 0}}},
                               {"loss@GRAD", {pe::dtype::fp32, {-1, 1}}}});
  EXPECT_EQ(grad_out.at("x@GRAD").dims, (pe::shape_t{-1, 10}));

  try {
    infer(op, {{"x", {pe::dtype::fp32, {-1, 10}}}, {"y", {pe::dtype::fp32, {-1, 10}}}});
    ADD_FAILURE() << "a soft label was accepted";
  } catch (const pe::error& e) {
    EXPECT_NE(std::string(e.what()).find("Label must be INT64, got FP32"), std::string::npos)
        << e.what();
  }
}

TEST(CrossEntropy2, RejectsLabelOutOfRange) {
  pe::scope vars = probability_scope();
  vars.var("y") = tensor::from_vector<std::int64_t>({2, 3, 0}, {3, 1});
  const std::string message = error_of(cross_entropy2_op(), vars);
  EXPECT_NE(message.find("Label value 3 in row 1 is outside [0, 3)"), std::string::npos)
      << message;
}

TEST(SoftmaxWithCrossEntropy, WithoutSoftmaxTakesProbabilitiesAsPaddle) {
  // paddle.nn.functional.cross_entropy(p, y, use_softmax=False) lowers to this.
  pe::scope vars = probability_scope();
  const auto op = cross_entropy_op({{"use_softmax", false}, {"ignore_index", std::int32_t{1}}});
  run_op(op, vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("loss"), {3, 1},
                                     {0.6931471824645996f, 0.f, 0.3566749691963196f}));
  EXPECT_EQ(elements_of<float>(vars.get("sm")), probs);
  run_grads(op, "loss@GRAD", vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("x@GRAD"), {3, 3}, probs_grad));
}

TEST(SoftmaxWithCrossEntropy, WithoutSoftmaxGradientMatchesNumeric) {
  // The grad op reads Softmax, the forward's copy of Logits, so the checker's perturbation
  // of Logits reaches it.
  for (const bool soft : {false, true})
    EXPECT_TRUE(cross_entropy_gradient_matches(
        random_tensor({3, 4}, 24, 0.2f, 1.f),
        soft ? random_tensor({3, 4}, 25, 0.f, 1.f) : random_labels({3, 1}, 4, 26),
        {{"use_softmax", false}, {"soft_label", soft}}))
        << soft;
}

} // namespace

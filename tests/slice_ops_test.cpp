// slice (paddle's x[:, 0], x[1:3]) and slice_grad: the box cut by axes/starts/ends with
// Paddle's negative and clamped bounds, decrease_axis, any dtype, shape inference with
// unknown dims, bounds from tensors (StartsTensor, EndsTensor and their lists, INT32 or
// INT64), Paddle's grad maker (Input, Out@GRAD -> Input@GRAD), the grad's scatter into
// zeros, gradients against central differences, and the errors users see.
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

attr_list box(ints axes, longs starts, longs ends, ints decrease = {}) {
  return {{"axes", axes}, {"starts", starts}, {"ends", ends}, {"decrease_axis", decrease}};
}

/// `op` with the variables `vars` bound to its duplicable input `slot`.
pe::proto::OpDesc with_list(pe::proto::OpDesc op, const std::string& slot, const std::vector<std::string>& vars) {
  pe::set_input(op, slot, vars);
  return op;
}

pe::proto::OpDesc slice_op(const attr_list& attrs) {
  return make_op("slice", {{"Input", "x"}}, {{"Out", "out"}}, attrs);
}

tensor forward(const tensor& x, const attr_list& attrs) {
  pe::scope vars;
  vars.var("x") = x.clone();
  run_op(slice_op(attrs), vars);
  return vars.get("out");
}

TEST(Slice, CutsTheBoxAndDecreasesAxes) {
  const tensor x = iota({2, 3, 4}); // x[a][b][c] = 12a + 4b + c
  // x[:, 0]: the first token of each row, axis 1 dropped (what BERT's pooler reads).
  EXPECT_TRUE(tensor_is(forward(x, box({1}, {0}, {1}, {1})), {2, 4}, {0, 1, 2, 3, 12, 13, 14, 15}));
  // Kept without decrease_axis.
  EXPECT_TRUE(tensor_is(forward(x, box({1}, {2}, {3})), {2, 1, 4}, {8, 9, 10, 11, 20, 21, 22, 23}));
  // Two axes; a negative start counts from the end, an end past the dim is clamped.
  EXPECT_TRUE(tensor_is(forward(x, box({0, 2}, {-1, 1}, {100, 3})), {1, 3, 2}, {13, 14, 17, 18, 21, 22}));
  // Every axis decreased: [1], as Paddle 2.6.
  EXPECT_TRUE(tensor_is(forward(x, box({0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {0, 1, 2})), {1}, {23}));
  // An empty range gives an empty box.
  EXPECT_EQ(forward(x, box({2}, {3}, {1})).shape(), (shape_t{2, 3, 0}));
}

TEST(Slice, MovesInt64Elements) {
  pe::scope vars;
  vars.var("x") = tensor::from_vector<std::int64_t>({10, 11, 12, 13, 14, 15}, {2, 3});
  run_op(slice_op(box({1}, {1}, {3})), vars);
  EXPECT_EQ(vars.get("out").type(), pe::dtype::int64);
  EXPECT_EQ((elements_of<std::int64_t>(vars.get("out"))), (std::vector<std::int64_t>{11, 12, 14, 15}));
}

TEST(Slice, InfersShapesWithUnknownDims) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 8, 32}}}, {"i", {pe::dtype::int64, {4, 6}}}};
  EXPECT_EQ(infer(slice_op(box({1}, {0}, {1}, {1})), vars).at("out").dims, (shape_t{-1, 32}));
  EXPECT_EQ(infer(slice_op(box({1}, {2}, {-1})), vars).at("out").dims, (shape_t{-1, 5, 32}));
  // The unknown batch axis sliced: its extent is unknown unless the bounds give one element.
  EXPECT_EQ(infer(slice_op(box({0}, {0}, {2})), vars).at("out").dims, (shape_t{-1, 8, 32}));
  EXPECT_EQ(infer(slice_op(box({0}, {3}, {4}, {0})), vars).at("out").dims, (shape_t{8, 32}));
  const auto ints_out = infer(make_op("slice", {{"Input", "i"}}, {{"Out", "out"}}, box({0}, {1}, {3})), vars);
  EXPECT_EQ(ints_out.at("out").dims, (shape_t{2, 6}));
  EXPECT_EQ(ints_out.at("out").type, pe::dtype::int64);
}

TEST(Slice, RefusesWhatItDoesNotSupport) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {2, 8}}}, {"s", {pe::dtype::int64, {1}}}};
  std::string message = infer_error(slice_op(box({1}, {0}, {2}, {1})), vars);
  EXPECT_TRUE(contains(message, "op #0 (slice)") && contains(message, "decrease_axis 1 has size 2")) << message;
  message = infer_error(slice_op(box({2}, {0}, {1})), vars);
  EXPECT_TRUE(contains(message, "axes 2 is out of range")) << message;
  message = infer_error(slice_op(box({1}, {0, 1}, {2})), vars);
  EXPECT_TRUE(contains(message, "axes has 1 entries but starts 2 and ends 1")) << message;
}

// x[:, i] and x[i:j] with i, j variables: Paddle puts the bounds in StartsTensor/EndsTensor
// (one 1-D tensor) or StartsTensorList/EndsTensorList (a one-element tensor per axis), with
// placeholders in the attributes.
TEST(Slice, TakesItsBoundsFromTensors) {
  const tensor x = iota({2, 3, 4}); // x[a][b][c] = 12a + 4b + c
  pe::scope vars;
  vars.var("x") = x.clone();
  vars.var("s") = tensor::from_vector<std::int64_t>({2}, {1});
  vars.var("e") = tensor::from_vector<std::int64_t>({3}, {1});
  const attr_list placeholders = box({1}, {-1}, {-1}, {1});
  run_op(make_op("slice", {{"Input", "x"}, {"StartsTensor", "s"}, {"EndsTensor", "e"}}, {{"Out", "out"}},
                 placeholders),
         vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 4}, {8, 9, 10, 11, 20, 21, 22, 23})); // x[:, 2]
  // Lists of INT32 scalars, one per axis; a negative start counts from the end; the ends'
  // attribute is used where no ends tensor is given.
  vars.var("s0") = tensor::from_vector<std::int32_t>({-1}, {1});
  vars.var("s1") = tensor::from_vector<std::int32_t>({1}, {1});
  run_op(with_list(slice_op(box({0, 2}, {-1, -1}, {2, 3})), "StartsTensorList", {"s0", "s1"}), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {1, 3, 2}, {13, 14, 17, 18, 21, 22})); // x[-1:, :, 1:3]
  // The grad reads the same bounds.
  vars.var("dout") = values({5, 7, 1, 2, 3, 4, 6, 8}, {2, 4});
  run_op(make_op("slice_grad", {{"Input", "x"}, {"Out@GRAD", "dout"}, {"StartsTensor", "s"}, {"EndsTensor", "e"}},
                 {{"Input@GRAD", "dx"}}, placeholders),
         vars);
  const tensor& dx = vars.get("dx");
  EXPECT_EQ(dx.shape(), (shape_t{2, 3, 4}));
  EXPECT_EQ(elements_of<float>(dx)[8], 5.f);
  EXPECT_EQ(elements_of<float>(dx)[20], 3.f);
  EXPECT_EQ(elements_of<float>(dx)[0], 0.f);
}

TEST(Slice, BoundsFromTensorsLeaveTheSlicedExtentsUnknown) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 8, 32}}},
                              {"s", {pe::dtype::int64, {1}}},
                              {"e", {pe::dtype::int64, {1}}}};
  const auto sliced = [&](const attr_list& attrs) {
    return infer(make_op("slice", {{"Input", "x"}, {"StartsTensor", "s"}, {"EndsTensor", "e"}}, {{"Out", "out"}}, attrs),
                 vars)
        .at("out")
        .dims;
  };
  // Placeholders that would give one element do not: the values come at run time.
  EXPECT_EQ(sliced(box({1}, {0}, {1})), (shape_t{-1, -1, 32}));
  EXPECT_EQ(sliced(box({1}, {-1}, {-1}, {1})), (shape_t{-1, 32})); // decreased: dropped
}

TEST(Slice, RefusesBoundTensorsThatDoNotFit) {
  pe::scope vars;
  vars.var("x") = iota({2, 8});
  vars.var("two") = tensor::from_vector<std::int64_t>({0, 1}, {2});
  vars.var("f") = values({1}, {1});
  vars.var("i") = tensor::from_vector<std::int64_t>({1}, {1});
  std::string message = error_of(
      make_op("slice", {{"Input", "x"}, {"StartsTensor", "two"}}, {{"Out", "out"}}, box({1}, {0}, {1})), vars);
  EXPECT_TRUE(contains(message, "StartsTensor holds 2 values for 1 axes")) << message;
  message = error_of(make_op("slice", {{"Input", "x"}, {"EndsTensor", "f"}}, {{"Out", "out"}}, box({1}, {0}, {1})),
                     vars);
  EXPECT_TRUE(contains(message, "input EndsTensor must be INT32 or INT64, got FP32")) << message;
  message = error_of(with_list(slice_op(box({1}, {0}, {1})), "StartsTensorList", {"i", "i"}), vars);
  EXPECT_TRUE(contains(message, "StartsTensorList holds 2 tensors for 1 axes")) << message;
  message = error_of(with_list(slice_op(box({1}, {0}, {1})), "EndsTensorList", {"two"}), vars);
  EXPECT_TRUE(contains(message, "EndsTensorList[0] holds 2 values, not 1")) << message;
}

TEST(Slice, GradMakerIsPaddles) {
  const auto op = slice_op(box({1}, {0}, {1}, {1}));
  const auto grads = pe::op_registry::global().find("slice")->make_grad(op);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "slice_grad");
  EXPECT_EQ(pe::input_args(grads[0], "Input"), std::vector<std::string>{"x"});
  EXPECT_EQ(pe::input_args(grads[0], "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grads[0], "Input@GRAD"), std::vector<std::string>{"x@GRAD"});
}

TEST(SliceGrad, ScattersOutGradIntoZeros) {
  pe::scope vars;
  vars.var("x") = iota({2, 3});
  vars.var("dout") = values({5, 7}, {2});
  run_op(make_op("slice_grad", {{"Input", "x"}, {"Out@GRAD", "dout"}}, {{"Input@GRAD", "dx"}},
                 box({1}, {-2}, {-1}, {1})),
         vars);
  EXPECT_TRUE(tensor_is(vars.get("dx"), {2, 3}, {0, 5, 0, 0, 7, 0}));
  // Out@GRAD of the wrong dims is refused by name.
  vars.var("dout") = values({5, 7, 9}, {3});
  const std::string message = error_of(make_op("slice_grad", {{"Input", "x"}, {"Out@GRAD", "dout"}},
                                               {{"Input@GRAD", "dx"}}, box({1}, {-2}, {-1}, {1})),
                                       vars);
  EXPECT_TRUE(contains(message, "Out@GRAD")) << message;
}

TEST(SliceGrad, MatchesCentralDifferences) {
  for (const auto& attrs : {box({1}, {0}, {1}, {1}), box({0, 2}, {1, -3}, {2, 100}), box({2}, {1}, {3})}) {
    EXPECT_TRUE(gradient_matches({.op_type = "slice",
                                  .inputs = {{"Input", {random_tensor({2, 3, 4}, 71)}}},
                                  .attrs = attrs,
                                  .check_slots = {"Input"}}));
  }
}

} // namespace

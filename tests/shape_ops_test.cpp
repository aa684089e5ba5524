// assign, reshape2, flatten_contiguous_range, transpose2, squeeze2, unsqueeze2, concat, split,
// cast: Out values and dims (any dtype), XShape, grad makers, shape inference with unknown dims,
// the errors users see, and gradients against central differences.
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

/// 0, 1, 2, ... as int64 in a tensor of `dims`: exact values whose order shows any permutation.
tensor int_iota(shape_t dims) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(pe::numel_of(dims)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i);
  return tensor::from_vector(v, std::move(dims));
}

pe::proto::OpDesc xshape_op(const std::string& type, const attr_list& attrs) {
  return make_op(type, {{"X", "x"}}, {{"Out", "out"}, {"XShape", "xshape"}}, attrs);
}

/// Runs `type` over X = x; returns the scope holding out and xshape.
pe::scope run(const std::string& type, const tensor& x, const attr_list& attrs) {
  pe::scope vars;
  vars.var("x") = x.clone();
  run_op(xshape_op(type, attrs), vars);
  return vars;
}

/// Out's dims of `type` over an X of `dims`, checking its elements kept their order and
/// XShape recorded X's dims.
shape_t dims_after(const std::string& type, const shape_t& dims, const attr_list& attrs) {
  pe::scope vars = run(type, int_iota(dims), attrs);
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("out")), elements_of<std::int64_t>(int_iota(dims)));
  shape_t xshape = {0};
  xshape.insert(xshape.end(), dims.begin(), dims.end());
  EXPECT_EQ(vars.get("xshape").shape(), xshape);
  return vars.get("out").shape();
}

/// The dims shape inference gives Out of `type` over an X of `dims`.
shape_t inferred(const std::string& type, const shape_t& dims, const attr_list& attrs) {
  return infer(xshape_op(type, attrs), {{"x", {pe::dtype::fp32, dims}}}).at("out").dims;
}

/// Expects shape inference and the kernel of `type` over an X of `dims` both to fail with a
/// message naming the op and containing `part`.
void expect_rejected(const std::string& type, const shape_t& dims, const attr_list& attrs,
                     const std::string& part) {
  std::string at_build;
  try {
    inferred(type, dims, attrs);
  } catch (const pe::error& e) {
    at_build = e.what();
  }
  EXPECT_NE(at_build.find("op #0 (" + type + "): "), std::string::npos) << at_build;
  EXPECT_NE(at_build.find(part), std::string::npos) << at_build;
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, dims);
  const std::string at_run = error_of(xshape_op(type, attrs), vars);
  EXPECT_NE(at_run.find(type), std::string::npos) << at_run;
  EXPECT_NE(at_run.find(part), std::string::npos) << at_run;
}

/// Checks X@GRAD of `type` over a random X of `dims`.
::testing::AssertionResult grad_ok(const std::string& type, const shape_t& dims,
                                   const attr_list& attrs) {
  return gradient_matches({.op_type = type,
                           .inputs = {{"X", {random_tensor(dims, 31)}}},
                           .attrs = attrs,
                           .check_slots = {"X"},
                           .loss_outputs = {"Out"},
                           .extra_outputs = {"XShape"}});
}

// --- assign ----------------------------------------------------------------------------

TEST(Assign, CopiesAnyDtypeAndGradIsAssign) {
  pe::scope vars;
  vars.var("x") = int_iota({2, 3});
  const auto op = make_op("assign", {{"X", "x"}}, {{"Out", "out"}});
  run_op(op, vars);
  EXPECT_EQ(vars.get("out").shape(), (shape_t{2, 3}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("out")),
            elements_of<std::int64_t>(int_iota({2, 3})));
  EXPECT_NE(vars.get("out").raw(), vars.get("x").raw());

  EXPECT_EQ(infer(op, {{"x", {pe::dtype::int64, {-1, 3}}}}).at("out").dims, (shape_t{-1, 3}));
  EXPECT_EQ(infer(op, {{"x", {pe::dtype::int64, {-1, 3}}}}).at("out").type, pe::dtype::int64);
  const auto grads = pe::op_registry::global().find("assign")->make_grad(op);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "assign");
  EXPECT_EQ(pe::input_args(grads[0], "X"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grads[0], "Out"), std::vector<std::string>{"x@GRAD"});
  EXPECT_TRUE(gradient_matches({.op_type = "assign",
                                .inputs = {{"X", {random_tensor({2, 3}, 30)}}},
                                .attrs = {},
                                .check_slots = {"X"}}));
}

// --- reshape2 --------------------------------------------------------------------------

TEST(Reshape2, CopiesAndInfersDims) {
  EXPECT_EQ(dims_after("reshape2", {2, 3, 4}, {{"shape", ints{0, -1}}}), (shape_t{2, 12}));
  EXPECT_EQ(dims_after("reshape2", {2, 3, 4}, {{"shape", ints{4, 0, -1}}}), (shape_t{4, 3, 2}));
  EXPECT_EQ(dims_after("reshape2", {2, 3, 4}, {{"shape", ints{24}}}), (shape_t{24}));
  // Unknown batch: 0 copies it, -1 stays unknown.
  EXPECT_EQ(inferred("reshape2", {-1, 784}, {{"shape", ints{-1, 28, 28}}}), (shape_t{-1, 28, 28}));
  EXPECT_EQ(inferred("reshape2", {-1, 1, 28, 28}, {{"shape", ints{0, 784}}}), (shape_t{-1, 784}));
  EXPECT_EQ(inferred("reshape2", {6, 4}, {{"shape", ints{-1, 3, 2}}}), (shape_t{4, 3, 2}));
}

TEST(Reshape2, RejectsBadShapes) {
  expect_rejected("reshape2", {2, 3, 4}, {{"shape", ints{5, -1}}},
                  "X's 24 elements do not fill shape [5, -1] for X [2, 3, 4]");
  expect_rejected("reshape2", {2, 3, 4}, {{"shape", ints{-1, -1}}}, "more than one -1 in shape");
  expect_rejected("reshape2", {2, 3}, {{"shape", ints{3, -2}}},
                  "shape[1] = -2 must be > 0, 0 (copy X's dim) or -1 (infer)");
  expect_rejected("reshape2", {6}, {{"shape", ints{1, 0}}},
                  "shape[1] = 0 copies a dim X does not have");

  const auto op = make_op("reshape2", {{"X", "x"}, {"Shape", "s"}}, {{"Out", "out"}},
                          {{"shape", ints{6}}});
  const std::string message = [&] {
    try {
      infer(op, {{"x", {pe::dtype::fp32, {2, 3}}}, {"s", {pe::dtype::int32, {1}}}});
    } catch (const pe::error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(message.find("the Shape and ShapeTensor inputs are not supported"), std::string::npos)
      << message;
}

TEST(Reshape2, GradReadsXShapeAndOutGrad) {
  const auto op = xshape_op("reshape2", {{"shape", ints{-1}}});
  const auto grad = pe::op_registry::global().find("reshape2")->make_grad(op).at(0);
  EXPECT_EQ(grad.type(), "reshape2_grad");
  EXPECT_EQ(pe::input_args(grad, "XShape"), std::vector<std::string>{"xshape"});
  EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_TRUE(pe::input_args(grad, "X").empty());
  EXPECT_EQ(pe::output_args(grad, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
  const auto dims = infer(grad, {{"xshape", {pe::dtype::fp32, {0, -1, 784}}},
                                 {"out@GRAD", {pe::dtype::fp32, {-1}}}});
  EXPECT_EQ(dims.at("x@GRAD").dims, (shape_t{-1, 784}));

  pe::scope vars;
  vars.var("xshape") = tensor(pe::dtype::fp32, {0, 2, 3});
  vars.var("out@GRAD") = tensor::zeros(pe::dtype::fp32, {5});
  const std::string message = error_of(grad, vars);
  EXPECT_NE(message.find("Out@GRAD [5] does not hold the elements of X [2, 3]"), std::string::npos)
      << message;
  EXPECT_TRUE(grad_ok("reshape2", {2, 3, 4}, {{"shape", ints{4, 0, -1}}}));
}

// --- flatten_contiguous_range ----------------------------------------------------------

TEST(FlattenContiguousRange, MergesAxesStartToStop) {
  const auto range = [](std::int32_t start, std::int32_t stop) {
    return attr_list{{"start_axis", start}, {"stop_axis", stop}};
  };
  EXPECT_EQ(dims_after("flatten_contiguous_range", {2, 3, 4, 5}, range(1, 2)),
            (shape_t{2, 12, 5}));
  EXPECT_EQ(dims_after("flatten_contiguous_range", {2, 3, 4, 5}, {}), (shape_t{2, 3, 4, 5}));
  EXPECT_EQ(dims_after("flatten_contiguous_range", {2, 3, 4, 5}, range(0, -1)), (shape_t{120}));
  EXPECT_EQ(dims_after("flatten_contiguous_range", {2, 3, 4, 5}, range(-3, 3)),
            (shape_t{2, 60}));
  EXPECT_EQ(inferred("flatten_contiguous_range", {-1, 3, 4}, range(1, 2)), (shape_t{-1, 12}));
  EXPECT_EQ(inferred("flatten_contiguous_range", {-1, 3, 4}, range(0, 1)), (shape_t{-1, 4}));
  expect_rejected("flatten_contiguous_range", {2, 3, 4}, range(2, 1),
                  "start_axis 2 comes after stop_axis 1 for X [2, 3, 4]");
  expect_rejected("flatten_contiguous_range", {2, 3, 4}, range(1, 3),
                  "stop_axis 3 is out of range for X of rank 3");
  EXPECT_TRUE(grad_ok("flatten_contiguous_range", {2, 3, 4}, range(1, 2)));
}

// --- transpose2 ------------------------------------------------------------------------

TEST(Transpose2, PermutesAxes) {
  pe::scope vars = run("transpose2", int_iota({2, 3}), {{"axis", ints{1, 0}}});
  EXPECT_EQ(vars.get("out").shape(), (shape_t{3, 2}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("out")),
            (std::vector<std::int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(vars.get("xshape").shape(), (shape_t{0, 2, 3}));

  // Out[i][j][k] = X[j][k][i] for axis [2, 0, 1] (-1 is axis 2), X = 0..23 over [2, 3, 4].
  vars = run("transpose2", int_iota({2, 3, 4}), {{"axis", ints{-1, 0, 1}}});
  ASSERT_EQ(vars.get("out").shape(), (shape_t{4, 2, 3}));
  std::vector<std::int64_t> expected;
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t k = 0; k < 3; ++k) expected.push_back(j * 12 + k * 4 + i);
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("out")), expected);

  EXPECT_EQ(inferred("transpose2", {-1, 3, 4}, {{"axis", ints{0, 2, 1}}}), (shape_t{-1, 4, 3}));
}

TEST(Transpose2, RejectsBadAxis) {
  expect_rejected("transpose2", {2, 3, 4}, {{"axis", ints{0, 1}}},
                  "axis [0, 1] must list each of the 3 axes of X once");
  expect_rejected("transpose2", {2, 3, 4}, {{"axis", ints{0, 1, -2}}},
                  "axis [0, 1, -2] must list each of the 3 axes of X once");
  expect_rejected("transpose2", {2, 3}, {{"axis", ints{0, 2}}},
                  "axis entry 2 is out of range for X of rank 2");
  std::string message;
  try {
    inferred("transpose2", {2, 3}, {});
  } catch (const pe::error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("missing required attribute 'axis'"), std::string::npos) << message;
}

TEST(Transpose2, GradPermutesBack) {
  const auto op = xshape_op("transpose2", {{"axis", ints{1, 2, 0}}});
  const auto grad = pe::op_registry::global().find("transpose2")->make_grad(op).at(0);
  EXPECT_EQ(grad.type(), "transpose2_grad");
  EXPECT_EQ(pe::input_args(grad, "XShape"), std::vector<std::string>{"xshape"});
  const auto dims = infer(grad, {{"xshape", {pe::dtype::fp32, {0, -1, 3, 4}}},
                                 {"out@GRAD", {pe::dtype::fp32, {3, 4, -1}}}});
  EXPECT_EQ(dims.at("x@GRAD").dims, (shape_t{-1, 3, 4}));
  for (const ints& axis : {ints{1, 0}, ints{1, 2, 0}, ints{2, 0, 1}}) {
    SCOPED_TRACE(pe::to_string(shape_t(axis.begin(), axis.end())));
    const shape_t dims = axis.size() == 2 ? shape_t{3, 4} : shape_t{2, 3, 4};
    EXPECT_TRUE(grad_ok("transpose2", dims, {{"axis", axis}}));
  }
}

// --- squeeze2, unsqueeze2 --------------------------------------------------------------

TEST(Squeeze2, RemovesListedOrAllOnes) {
  EXPECT_EQ(dims_after("squeeze2", {1, 3, 1, 2}, {}), (shape_t{3, 2}));
  EXPECT_EQ(dims_after("squeeze2", {1, 3, 1, 2}, {{"axes", ints{0}}}), (shape_t{3, 1, 2}));
  EXPECT_EQ(dims_after("squeeze2", {1, 3, 1, 2}, {{"axes", ints{-2}}}), (shape_t{1, 3, 2}));
  // A listed dim other than 1 stays, as in Paddle.
  EXPECT_EQ(dims_after("squeeze2", {1, 3, 1, 2}, {{"axes", ints{1, 2}}}), (shape_t{1, 3, 2}));
  EXPECT_EQ(dims_after("squeeze2", {1, 1}, {}), (shape_t{}));
  EXPECT_EQ(inferred("squeeze2", {-1, 1, 3}, {{"axes", ints{1}}}), (shape_t{-1, 3}));
  expect_rejected("squeeze2", {1, 3}, {{"axes", ints{2}}},
                  "axes entry 2 is out of range for X of rank 2");
  EXPECT_TRUE(grad_ok("squeeze2", {3, 1, 4}, {{"axes", ints{1}}}));
}

TEST(Unsqueeze2, InsertsOnesInTurn) {
  EXPECT_EQ(dims_after("unsqueeze2", {3, 2}, {{"axes", ints{0}}}), (shape_t{1, 3, 2}));
  EXPECT_EQ(dims_after("unsqueeze2", {3, 2}, {{"axes", ints{-1}}}), (shape_t{3, 2, 1}));
  EXPECT_EQ(dims_after("unsqueeze2", {3, 2}, {{"axes", ints{0, 2}}}), (shape_t{1, 3, 1, 2}));
  EXPECT_EQ(dims_after("unsqueeze2", {3, 2}, {{"axes", ints{0, 0}}}), (shape_t{1, 1, 3, 2}));
  // -1 counts in the dims built so far: [3, 1, 2] gets its 1 appended.
  EXPECT_EQ(dims_after("unsqueeze2", {3, 2}, {{"axes", ints{1, -1}}}), (shape_t{3, 1, 2, 1}));
  EXPECT_EQ(inferred("unsqueeze2", {-1, 4}, {{"axes", ints{1}}}), (shape_t{-1, 1, 4}));
  expect_rejected("unsqueeze2", {3, 2}, {{"axes", ints{3}}},
                  "axes entry 3 is out of range for inserting into 2 dims");
  EXPECT_TRUE(grad_ok("unsqueeze2", {3, 4}, {{"axes", ints{0, -1}}}));
}

TEST(ShapeOps, GradsOfXShapeOps) {
  for (const char* type : {"flatten_contiguous_range", "squeeze2", "unsqueeze2"}) {
    const auto grad = pe::op_registry::global().find(type)->make_grad(xshape_op(type, {})).at(0);
    EXPECT_EQ(grad.type(), std::string(type) + "_grad");
    EXPECT_EQ(pe::input_args(grad, "XShape"), std::vector<std::string>{"xshape"});
    EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  }
}

// --- concat, split ---------------------------------------------------------------------

/// An op binding each slot to several variables.
pe::proto::OpDesc multi_op(const std::string& type,
                           const std::vector<std::pair<std::string, std::vector<std::string>>>& in,
                           const std::vector<std::pair<std::string, std::vector<std::string>>>& out,
                           const attr_list& attrs) {
  pe::proto::OpDesc op;
  op.set_type(type);
  for (const auto& [slot, vars] : in) pe::set_input(op, slot, vars);
  for (const auto& [slot, vars] : out) pe::set_output(op, slot, vars);
  for (const auto& [name, value] : attrs) pe::set_attr(op, name, value);
  return op;
}

/// The message of the pe::error shape inference of `op` over `vars` throws ("" if none).
std::string infer_error(const pe::proto::OpDesc& op, const pe::var_table& vars) {
  try {
    infer(op, vars);
  } catch (const pe::error& e) {
    return e.what();
  }
  return "";
}

std::vector<std::int64_t> ivec(std::initializer_list<std::int64_t> v) { return v; }

TEST(Concat, JoinsAlongAxisAnyDtype) {
  pe::scope vars;
  vars.var("a") = int_iota({2, 2});
  vars.var("b") = tensor::from_vector(ivec({10, 11, 12, 13, 14, 15}), {2, 3});
  run_op(multi_op("concat", {{"X", {"a", "b"}}}, {{"Out", {"out"}}}, {{"axis", std::int32_t{-1}}}),
         vars);
  EXPECT_EQ(vars.get("out").shape(), (shape_t{2, 5}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("out")), ivec({0, 1, 10, 11, 12, 2, 3, 13, 14, 15}));

  run_op(multi_op("concat", {{"X", {"a", "a"}}}, {{"Out", {"a"}}}, {}), vars);
  EXPECT_EQ(vars.get("a").shape(), (shape_t{4, 2}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("a")), ivec({0, 1, 2, 3, 0, 1, 2, 3}));

  const auto op = multi_op("concat", {{"X", {"a", "b"}}}, {{"Out", {"out"}}},
                           {{"axis", std::int32_t{1}}});
  const auto out = infer(op, {{"a", {pe::dtype::int64, {-1, 2, 4}}},
                              {"b", {pe::dtype::int64, {-1, 3, 4}}}}).at("out");
  EXPECT_EQ(out.dims, (shape_t{-1, 5, 4}));
  EXPECT_EQ(out.type, pe::dtype::int64);
  EXPECT_EQ(infer(op, {{"a", {pe::dtype::fp32, {2, -1}}}, {"b", {pe::dtype::fp32, {2, 3}}}})
                .at("out")
                .dims,
            (shape_t{2, -1}));
}

TEST(Concat, RejectsMismatchedInputs) {
  const auto op = multi_op("concat", {{"X", {"a", "b"}}}, {{"Out", {"out"}}},
                           {{"axis", std::int32_t{1}}});
  const std::string part = "X[1] [3, 4] does not match X[0] [2, 3] off axis 1";
  std::string message =
      infer_error(op, {{"a", {pe::dtype::fp32, {2, 3}}}, {"b", {pe::dtype::fp32, {3, 4}}}});
  EXPECT_NE(message.find("op #0 (concat): " + part), std::string::npos) << message;
  pe::scope vars;
  vars.var("a") = tensor::zeros(pe::dtype::fp32, {2, 3});
  vars.var("b") = tensor::zeros(pe::dtype::fp32, {3, 4});
  message = error_of(op, vars);
  EXPECT_NE(message.find(part), std::string::npos) << message;

  message = infer_error(op, {{"a", {pe::dtype::fp32, {2, 3}}}, {"b", {pe::dtype::int64, {2, 3}}}});
  EXPECT_NE(message.find("X[1] is INT64, but X[0] is FP32"), std::string::npos) << message;
  message = infer_error(op, {{"a", {pe::dtype::fp32, {2, 3}}}, {"b", {pe::dtype::fp32, {2}}}});
  EXPECT_NE(message.find("X[1] [2] does not match"), std::string::npos) << message;
  message = infer_error(
      multi_op("concat", {{"X", {"a"}}}, {{"Out", {"out"}}}, {{"axis", std::int32_t{2}}}),
      {{"a", {pe::dtype::fp32, {2, 3}}}});
  EXPECT_NE(message.find("axis 2 is out of range for X of rank 2"), std::string::npos) << message;
  message = infer_error(
      multi_op("concat", {{"X", {"a"}}, {"AxisTensor", {"t"}}}, {{"Out", {"out"}}}, {}),
      {{"a", {pe::dtype::fp32, {2, 3}}}, {"t", {pe::dtype::int32, {1}}}});
  EXPECT_NE(message.find("the AxisTensor input is not supported"), std::string::npos) << message;
}

TEST(Concat, GradSplitsOutGradAtInputDims) {
  const auto op = multi_op("concat", {{"X", {"a", "b"}}}, {{"Out", {"out"}}},
                           {{"axis", std::int32_t{1}}});
  const auto grad = pe::op_registry::global().find("concat")->make_grad(op).at(0);
  EXPECT_EQ(grad.type(), "concat_grad");
  EXPECT_EQ(pe::input_args(grad, "X"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(pe::output_args(grad, "X@GRAD"), (std::vector<std::string>{"a@GRAD", "b@GRAD"}));
  const auto dims = infer(grad, {{"a", {pe::dtype::fp32, {-1, 2}}},
                                 {"b", {pe::dtype::fp32, {-1, 3}}},
                                 {"out@GRAD", {pe::dtype::fp32, {-1, 5}}}});
  EXPECT_EQ(dims.at("a@GRAD").dims, (shape_t{-1, 2}));
  EXPECT_EQ(dims.at("b@GRAD").dims, (shape_t{-1, 3}));

  for (const std::int32_t axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    const shape_t b_dims = axis == 0 ? shape_t{1, 3, 4} : axis == 1 ? shape_t{2, 1, 4}
                                                                    : shape_t{2, 3, 2};
    EXPECT_TRUE(gradient_matches(
        {.op_type = "concat",
         .inputs = {{"X", {random_tensor({2, 3, 4}, 40), random_tensor(b_dims, 41),
                           random_tensor({2, 3, 4}, 42)}}},
         .attrs = {{"axis", axis}},
         .check_slots = {"X"}}));
  }
}

TEST(Split, CutsByNumOrSections) {
  pe::scope vars;
  vars.var("x") = int_iota({2, 5});
  run_op(multi_op("split", {{"X", {"x"}}}, {{"Out", {"p", "q", "r"}}},
                  {{"axis", std::int32_t{1}}, {"sections", ints{2, -1, 1}}}),
         vars);
  EXPECT_EQ(vars.get("p").shape(), (shape_t{2, 2}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("p")), ivec({0, 1, 5, 6}));
  EXPECT_EQ(vars.get("q").shape(), (shape_t{2, 2}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("q")), ivec({2, 3, 7, 8}));
  EXPECT_EQ(vars.get("r").shape(), (shape_t{2, 1}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("r")), ivec({4, 9}));

  // X split in place into itself and another.
  run_op(multi_op("split", {{"X", {"x"}}}, {{"Out", {"x", "y"}}},
                  {{"axis", std::int32_t{0}}, {"num", std::int32_t{2}}}),
         vars);
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("x")), ivec({0, 1, 2, 3, 4}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("y")), ivec({5, 6, 7, 8, 9}));

  const auto by_num = multi_op("split", {{"X", {"x"}}}, {{"Out", {"p", "q"}}},
                               {{"axis", std::int32_t{-1}}, {"num", std::int32_t{2}}});
  const auto out = infer(by_num, {{"x", {pe::dtype::int64, {-1, 6}}}});
  EXPECT_EQ(out.at("p").dims, (shape_t{-1, 3}));
  EXPECT_EQ(out.at("q").type, pe::dtype::int64);
  EXPECT_EQ(infer(by_num, {{"x", {pe::dtype::fp32, {4, -1}}}}).at("q").dims, (shape_t{4, -1}));
  const auto by_sections = multi_op("split", {{"X", {"x"}}}, {{"Out", {"p", "q"}}},
                                    {{"axis", std::int32_t{0}}, {"sections", ints{-1, 2}}});
  EXPECT_EQ(infer(by_sections, {{"x", {pe::dtype::fp32, {-1, 6}}}}).at("p").dims,
            (shape_t{-1, 6}));
  EXPECT_EQ(infer(by_sections, {{"x", {pe::dtype::fp32, {-1, 6}}}}).at("q").dims,
            (shape_t{2, 6}));
}

TEST(Split, RejectsBadSections) {
  const auto op = multi_op("split", {{"X", {"x"}}}, {{"Out", {"p", "q"}}},
                           {{"axis", std::int32_t{1}}, {"sections", ints{2, 2}}});
  const std::string part =
      "sections do not add up to X's axis dim: X [2, 5] at axis 1 with num 0, sections [2, 2]";
  std::string message = infer_error(op, {{"x", {pe::dtype::fp32, {2, 5}}}});
  EXPECT_NE(message.find("op #0 (split): " + part), std::string::npos) << message;
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {2, 5});
  message = error_of(op, vars);
  EXPECT_NE(message.find(part), std::string::npos) << message;

  const auto with = [](const attr_list& attrs) {
    return multi_op("split", {{"X", {"x"}}}, {{"Out", {"p", "q"}}}, attrs);
  };
  const pe::var_table x = {{"x", {pe::dtype::fp32, {2, 5}}}};
  message = infer_error(with({{"axis", std::int32_t{1}}, {"num", std::int32_t{2}}}), x);
  EXPECT_NE(message.find("X's axis dim does not divide evenly"), std::string::npos) << message;
  message = infer_error(with({{"sections", ints{-1, -1}}}), x);
  EXPECT_NE(message.find("sections may hold one -1 and sizes >= 0 only"), std::string::npos)
      << message;
  message = infer_error(with({{"axis", std::int32_t{1}}, {"sections", ints{6, -1}}}), x);
  EXPECT_NE(message.find("sections do not add up"), std::string::npos) << message;
  message = infer_error(with({}), x);
  EXPECT_NE(message.find("num must be > 0 or sections non-empty"), std::string::npos) << message;
  message = infer_error(with({{"num", std::int32_t{3}}, {"axis", std::int32_t{1}}}),
                        {{"x", {pe::dtype::fp32, {2, 6}}}});
  EXPECT_NE(message.find("Out binds 2 variables for 3 parts"), std::string::npos) << message;
  // A hostile num is refused before anything is sized by it (it once made a 16 GiB vector).
  message = infer_error(with({{"num", std::int32_t{2147483647}}}), x);
  EXPECT_NE(message.find("Out binds 2 variables for 2147483647 parts"), std::string::npos) << message;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {2, 5});
  message = error_of(with({{"num", std::int32_t{2147483647}}}), vars);
  EXPECT_NE(message.find("Out binds 2 variables for 2147483647 parts"), std::string::npos) << message;
  message = infer_error(multi_op("split", {{"X", {"x"}}, {"SectionsTensorList", {"s"}}},
                                 {{"Out", {"p", "q"}}}, {{"num", std::int32_t{2}}}),
                        {{"x", {pe::dtype::fp32, {2, 6}}}, {"s", {pe::dtype::int32, {1}}}});
  EXPECT_NE(message.find("SectionsTensorList inputs are not supported"), std::string::npos)
      << message;
}

TEST(Split, GradIsConcatOfOutGrads) {
  const auto op = multi_op("split", {{"X", {"x"}}}, {{"Out", {"p", "q"}}},
                           {{"axis", std::int32_t{1}}, {"sections", ints{1, 3}}});
  const auto grads = pe::op_registry::global().find("split")->make_grad(op);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "concat");
  EXPECT_EQ(pe::input_args(grads[0], "X"), (std::vector<std::string>{"p@GRAD", "q@GRAD"}));
  EXPECT_EQ(pe::output_args(grads[0], "Out"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(infer(grads[0], {{"p@GRAD", {pe::dtype::fp32, {-1, 1}}},
                             {"q@GRAD", {pe::dtype::fp32, {-1, 3}}}})
                .at("x@GRAD")
                .dims,
            (shape_t{-1, 4}));

  // split is linear and moves each element once, so X@GRAD is exactly the Out@GRADs joined:
  // X@GRAD[r][c] = p@GRAD[r][c] for c < 1, q@GRAD[r][c - 1] otherwise.
  pe::scope vars;
  vars.var("x") = random_tensor({2, 4}, 43);
  run_op(op, vars);
  vars.var("p@GRAD") = pe::testing::values({1, 2}, {2, 1});
  vars.var("q@GRAD") = pe::testing::values({3, 4, 5, 6, 7, 8}, {2, 3});
  run_op(grads[0], vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("x@GRAD"), {2, 4}, {1, 3, 4, 5, 2, 6, 7, 8}));
}

// --- cast ------------------------------------------------------------------------------

pe::proto::OpDesc cast_op(pe::dtype in, pe::dtype out) {
  return make_op("cast", {{"X", "x"}}, {{"Out", "out"}},
                 {{"in_dtype", static_cast<std::int32_t>(in)},
                  {"out_dtype", static_cast<std::int32_t>(out)}});
}

TEST(Cast, ConvertsBetweenElementTypes) {
  pe::scope vars;
  vars.var("x") = pe::testing::values({-1.5f, 0.f, 2.75f, 3.f}, {2, 2});
  run_op(cast_op(pe::dtype::fp32, pe::dtype::int64), vars);
  EXPECT_EQ(vars.get("out").type(), pe::dtype::int64);
  EXPECT_EQ(vars.get("out").shape(), (shape_t{2, 2}));
  EXPECT_EQ(elements_of<std::int64_t>(vars.get("out")), ivec({-1, 0, 2, 3}));

  run_op(cast_op(pe::dtype::fp32, pe::dtype::boolean), vars);
  auto flags = vars.get("out").values<bool>();
  EXPECT_EQ(std::vector<bool>(flags.begin(), flags.end()),
            (std::vector<bool>{true, false, true, true}));

  vars.var("x") = int_iota({3});
  run_op(cast_op(pe::dtype::int64, pe::dtype::fp64), vars);
  auto doubles = vars.get("out").values<double>();
  EXPECT_EQ(std::vector<double>(doubles.begin(), doubles.end()), (std::vector<double>{0, 1, 2}));

  // In place: X becomes INT32.
  run_op(make_op("cast", {{"X", "x"}}, {{"Out", "x"}},
                 {{"in_dtype", std::int32_t{3}}, {"out_dtype", std::int32_t{2}}}),
         vars);
  auto ints32 = vars.get("x").values<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(ints32.begin(), ints32.end()), (ints{0, 1, 2}));

  const auto out =
      infer(cast_op(pe::dtype::fp32, pe::dtype::int32), {{"x", {pe::dtype::fp32, {-1, 4}}}})
          .at("out");
  EXPECT_EQ(out.dims, (shape_t{-1, 4}));
  EXPECT_EQ(out.type, pe::dtype::int32);
}

TEST(Cast, RejectsMismatchedAndUnsupportedDtypes) {
  const pe::var_table x = {{"x", {pe::dtype::int64, {2}}}};
  std::string message = infer_error(cast_op(pe::dtype::fp32, pe::dtype::int32), x);
  EXPECT_NE(message.find("op #0 (cast): X is INT64, but in_dtype is FP32"), std::string::npos)
      << message;
  message = infer_error(cast_op(pe::dtype::int64, pe::dtype::fp16), x);
  EXPECT_NE(message.find("out_dtype FP16 is not castable"), std::string::npos) << message;
  message = infer_error(make_op("cast", {{"X", "x"}}, {{"Out", "out"}},
                                {{"in_dtype", std::int32_t{3}}}),
                        x);
  EXPECT_NE(message.find("missing required attribute 'out_dtype'"), std::string::npos) << message;

  pe::scope vars;
  vars.var("x") = int_iota({2});
  message = error_of(cast_op(pe::dtype::fp32, pe::dtype::int32), vars);
  EXPECT_NE(message.find("X is INT64, but in_dtype is FP32"), std::string::npos) << message;
  message = error_of(cast_op(pe::dtype::int64, pe::dtype::bf16), vars);
  EXPECT_NE(message.find("out_dtype BF16 is not castable"), std::string::npos) << message;
}

TEST(Cast, GradCastsBack) {
  const auto op = cast_op(pe::dtype::fp32, pe::dtype::fp64);
  const auto grads = pe::op_registry::global().find("cast")->make_grad(op);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "cast");
  EXPECT_EQ(pe::input_args(grads[0], "X"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grads[0], "Out"), std::vector<std::string>{"x@GRAD"});
  const auto dims = infer(grads[0], {{"out@GRAD", {pe::dtype::fp64, {-1, 3}}}});
  EXPECT_EQ(dims.at("x@GRAD").type, pe::dtype::fp32);
  EXPECT_EQ(dims.at("x@GRAD").dims, (shape_t{-1, 3}));

  // FP32 -> FP64 -> FP32 loses nothing: X@GRAD is exactly Out@GRAD.
  pe::scope vars;
  vars.var("out@GRAD") = tensor::from_vector(std::vector<double>{0.25, -1.5, 3}, {3});
  run_op(grads[0], vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("x@GRAD"), {3}, {0.25f, -1.5f, 3.f}));
  EXPECT_TRUE(gradient_matches({.op_type = "cast",
                                .inputs = {{"X", {random_tensor({2, 3}, 44)}}},
                                .attrs = {{"in_dtype", std::int32_t{5}},
                                          {"out_dtype", std::int32_t{5}}},
                                .check_slots = {"X"}}));
}

} // namespace

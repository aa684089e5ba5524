// assign, reshape2, flatten_contiguous_range, transpose2, squeeze2, unsqueeze2: Out values and
// dims (any dtype), XShape, grad makers, shape inference with unknown dims, the errors users
// see, and gradients against central differences.
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

using pe::shape_t;
using pe::tensor;
using pe::testing::attr_list;
using pe::testing::error_of;
using pe::testing::gradient_matches;
using pe::testing::infer;
using pe::testing::make_op;
using pe::testing::random_tensor;
using pe::testing::run_op;
using ints = std::vector<std::int32_t>;

/// 0, 1, 2, ... as int64 in a tensor of `dims`: exact values whose order shows any permutation.
tensor int_iota(shape_t dims) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(pe::numel_of(dims)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i);
  return tensor::from_vector(v, std::move(dims));
}

std::vector<std::int64_t> elements(const tensor& t) {
  auto v = t.values<std::int64_t>();
  return {v.begin(), v.end()};
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
  EXPECT_EQ(elements(vars.get("out")), elements(int_iota(dims)));
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
  EXPECT_EQ(elements(vars.get("out")), elements(int_iota({2, 3})));
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
  EXPECT_EQ(elements(vars.get("out")), (std::vector<std::int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(vars.get("xshape").shape(), (shape_t{0, 2, 3}));

  // Out[i][j][k] = X[j][k][i] for axis [2, 0, 1] (-1 is axis 2), X = 0..23 over [2, 3, 4].
  vars = run("transpose2", int_iota({2, 3, 4}), {{"axis", ints{-1, 0, 1}}});
  ASSERT_EQ(vars.get("out").shape(), (shape_t{4, 2, 3}));
  std::vector<std::int64_t> expected;
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t k = 0; k < 3; ++k) expected.push_back(j * 12 + k * 4 + i);
  EXPECT_EQ(elements(vars.get("out")), expected);

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

} // namespace

// layer_norm: forward values computed by hand and against a double-precision reference (with
// and without Scale and Bias, begin_norm_axis 1 and 2 of a 3-D X), statistics that stay exact
// for rows far from zero, in place on X, a place without rows, the grad maker (with and
// without Scale and Bias) and append_backward, shape inference, the errors users see (shape
// inference and kernels), the grad's outputs computed one at a time, and the gradients of X,
// Scale and Bias against central differences: the gradient checker's (FP32) and those of the
// double-precision reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "graph/attributes.hpp"
#include "graph/backward.hpp"
#include "graph/builder.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/exec/scope.hpp"
#include "graph/op_registry.hpp"
#include "graph/validate.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::shape_t;
using pe::tensor;

/// layer_norm over X = `x`, Scale = `scale` and Bias = `bias` (each of those two unbound
/// where null), writing y, mean and var.
pe::proto::OpDesc ln_op_of(const char* x, const char* scale, const char* bias,
                           const attr_list& attrs) {
  slot_vars inputs = {{"X", x}};
  if (scale != nullptr) inputs.push_back({"Scale", scale});
  if (bias != nullptr) inputs.push_back({"Bias", bias});
  return make_op("layer_norm", inputs, {{"Y", "y"}, {"Mean", "mean"}, {"Variance", "var"}},
                 attrs);
}

/// ln_op_of with begin_norm_axis `axis` and the other attributes left to their defaults.
pe::proto::OpDesc ln_op_at(const char* x, const char* scale, const char* bias, std::int32_t axis) {
  return ln_op_of(x, scale, bias, {{"begin_norm_axis", axis}});
}

/// layer_norm over x, with Scale = scale and Bias = bias where asked.
pe::proto::OpDesc ln_op(bool with_scale, bool with_bias, const attr_list& attrs = {}) {
  return ln_op_of("x", with_scale ? "scale" : nullptr, with_bias ? "bias" : nullptr, attrs);
}

attr_list axis_attrs(std::int32_t begin_norm_axis, float epsilon = 1e-5f) {
  return {{"begin_norm_axis", begin_norm_axis}, {"epsilon", epsilon}};
}

/// The elements of an FP32 tensor as doubles.
std::vector<double> doubles(const tensor& t) {
  const auto v = t.values<float>();
  return {v.begin(), v.end()};
}

/// The naive reference in double over X's rows of n elements: Y, each row's mean and biased
/// variance. An empty Scale counts as 1, an empty Bias as 0.
struct ln_reference {
  std::vector<double> y, mean, var;
};

ln_reference reference(const std::vector<double>& x, std::int64_t n,
                       const std::vector<double>& scale, const std::vector<double>& bias,
                       double epsilon) {
  ln_reference r;
  for (std::size_t row = 0; row < x.size() / static_cast<std::size_t>(n); ++row) {
    const auto at = [&](std::int64_t j) { return x[row * static_cast<std::size_t>(n) + j]; };
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < n; ++j) mean += at(j);
    mean /= static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) var += (at(j) - mean) * (at(j) - mean);
    var /= static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) {
      double v = (at(j) - mean) / std::sqrt(var + epsilon);
      if (!scale.empty()) v *= scale[j];
      if (!bias.empty()) v += bias[j];
      r.y.push_back(v);
    }
    r.mean.push_back(mean);
    r.var.push_back(var);
  }
  return r;
}

/// reference() of FP32 tensors (Scale and Bias null when absent).
ln_reference reference(const tensor& x, std::int64_t n, const tensor* scale, const tensor* bias,
                       double epsilon) {
  return reference(doubles(x), n, scale != nullptr ? doubles(*scale) : std::vector<double>{},
                   bias != nullptr ? doubles(*bias) : std::vector<double>{}, epsilon);
}

/// What tensor_is compares with.
std::vector<float> floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

TEST(LayerNorm, HandComputedRows) {
  // Row 0 = 1, 2, 3, 4: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25, so
  // Y = (-1.5, -0.5, 0.5, 1.5) / sqrt(1.25). Row 1 = 2, 2, 2, 6: mean 3, variance
  // (1 + 1 + 1 + 9) / 4 = 3, Y = (-1, -1, -1, 3) / sqrt(3). epsilon 0.
  const std::vector<float> plain = {-1.3416408f, -0.4472136f,  0.4472136f,  1.3416408f,
                                    -0.5773503f, -0.5773503f, -0.5773503f, 1.7320508f};
  pe::scope vars;
  vars.var("x") = values({1, 2, 3, 4, 2, 2, 2, 6}, {2, 4});
  vars.var("scale") = values({1, -1, 2, 0.5f}, {4});
  vars.var("bias") = values({0, 1, 0, -1}, {4});
  run_op(ln_op(false, false, axis_attrs(1, 0.f)), vars);
  EXPECT_TRUE(tensor_is(vars.get("y"), {2, 4}, plain));
  EXPECT_TRUE(tensor_is(vars.get("mean"), {2}, {2.5f, 3.f}));
  EXPECT_TRUE(tensor_is(vars.get("var"), {2}, {1.25f, 3.f}));
  // Scale (1, -1, 2, 0.5) and Bias (0, 1, 0, -1) per column.
  run_op(ln_op(true, true, axis_attrs(1, 0.f)), vars);
  EXPECT_TRUE(tensor_is(vars.get("y"), {2, 4},
                        {-1.3416408f, 1.4472136f, 0.8944272f, -0.3291796f, -0.5773503f,
                         1.5773503f, -1.1547005f, -0.1339746f}));
  // The default epsilon 1e-5 enters under the square root: 1 / sqrt(1.25 + 1e-5).
  run_op(ln_op(false, false), vars);
  EXPECT_NEAR(vars.get("y").data<float>()[3], 1.5 / std::sqrt(1.25 + 1e-5), 1e-6);
}

TEST(LayerNorm, MatchesTheReferenceWithAndWithoutScaleAndBias) {
  // X [2, 3, 4]: begin_norm_axis 1 gives 2 rows of 12, 2 gives 6 rows of 4.
  const tensor x = random_tensor({2, 3, 4}, 11, -2.f, 3.f);
  for (const std::int32_t axis : {1, 2}) {
    const std::int64_t n = axis == 1 ? 12 : 4;
    // Mean and Variance have X's dims before begin_norm_axis, as Paddle 2.6 declares them.
    const shape_t stats = axis == 1 ? shape_t{2} : shape_t{2, 3};
    const tensor scale = random_tensor({n}, 12, 0.5f, 1.5f), bias = random_tensor({n}, 13);
    for (const bool with_scale : {false, true})
      for (const bool with_bias : {false, true}) {
        SCOPED_TRACE("begin_norm_axis " + std::to_string(axis) + (with_scale ? ", Scale" : "") +
                     (with_bias ? ", Bias" : ""));
        pe::scope vars;
        vars.var("x") = x.clone();
        vars.var("scale") = scale.clone();
        vars.var("bias") = bias.clone();
        run_op(ln_op(with_scale, with_bias, axis_attrs(axis, 1e-3f)), vars);
        const ln_reference r =
            reference(x, n, with_scale ? &scale : nullptr, with_bias ? &bias : nullptr, 1e-3);
        EXPECT_TRUE(tensor_is(vars.get("y"), {2, 3, 4}, floats(r.y)));
        EXPECT_TRUE(tensor_is(vars.get("mean"), stats, floats(r.mean)));
        EXPECT_TRUE(tensor_is(vars.get("var"), stats, floats(r.var)));
      }
  }
}

TEST(LayerNorm, StatisticsStayExactFarFromZero) {
  // Rows 10000 + (0, 0.5, 1, 1.5) and -50000 + (0, 0.25, 0.5, 0.75): every value, mean and
  // deviation is exact in FP32, the variances are 0.3125 and 0.078125. One pass of E[x^2] -
  // mean^2 in float would lose them entirely (x^2 ~ 1e8 to 2.5e9, spacing 8 to 256).
  pe::scope vars;
  vars.var("x") = values({10000, 10000.5f, 10001, 10001.5f, -50000, -49999.75f, -49999.5f,
                          -49999.25f},
                         {2, 4});
  run_op(ln_op(false, false, axis_attrs(1, 0.f)), vars);
  EXPECT_TRUE(tensor_is(vars.get("mean"), {2}, {10000.75f, -49999.625f}));
  EXPECT_TRUE(tensor_is(vars.get("var"), {2}, {0.3125f, 0.078125f}));
  EXPECT_TRUE(tensor_is(vars.get("y"), {2, 4},
                        {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f, -1.3416408f,
                         -0.4472136f, 0.4472136f, 1.3416408f}));
}

TEST(LayerNorm, InPlaceOnX) {
  const tensor x = random_tensor({3, 5}, 21);
  const tensor scale = random_tensor({5}, 22, 0.5f, 1.5f), bias = random_tensor({5}, 23);
  pe::scope vars;
  vars.var("x") = x.clone();
  vars.var("scale") = scale.clone();
  vars.var("bias") = bias.clone();
  run_op(make_op("layer_norm", {{"X", "x"}, {"Scale", "scale"}, {"Bias", "bias"}},
                 {{"Y", "x"}, {"Mean", "mean"}, {"Variance", "var"}}),
         vars);
  const ln_reference r = reference(x, 5, &scale, &bias, 1e-5);
  EXPECT_TRUE(tensor_is(vars.get("x"), {3, 5}, floats(r.y)));
  EXPECT_TRUE(tensor_is(vars.get("mean"), {3}, floats(r.mean)));
}

/// The variable ln_grad_op binds to `slot`@GRAD (slot X, Scale or Bias).
std::string grad_var(const std::string& slot) {
  return slot == "X" ? "dx" : slot == "Scale" ? "dscale" : "dbias";
}

/// layer_norm_grad as the grad maker emits it for ln_op(with_scale, with_bias), Y@GRAD = dy,
/// with only the grads of the slots in `outputs` bound.
pe::proto::OpDesc ln_grad_op(bool with_scale, bool with_bias,
                             const std::vector<std::string>& outputs, const attr_list& attrs) {
  slot_vars inputs = {{"X", "x"}, {"Mean", "mean"}, {"Variance", "var"}, {"Y@GRAD", "dy"}};
  if (with_scale) inputs.push_back({"Scale", "scale"});
  if (with_bias) inputs.push_back({"Bias", "bias"});
  slot_vars outs;
  for (const std::string& slot : outputs) outs.push_back({slot + "@GRAD", grad_var(slot)});
  return make_op("layer_norm_grad", inputs, outs, attrs);
}

TEST(LayerNorm, APlaceWithoutRows) {
  // An uneven split can leave a place no rows: Y empty, no statistics, and the parameters'
  // gradients zero (not the sum of whatever memory held).
  pe::scope vars;
  vars.var("x") = tensor::zeros(pe::dtype::fp32, {0, 3, 4});
  vars.var("scale") = random_tensor({12}, 31);
  vars.var("bias") = random_tensor({12}, 32);
  run_op(ln_op(true, true), vars);
  EXPECT_EQ(vars.get("y").shape(), (shape_t{0, 3, 4}));
  EXPECT_EQ(vars.get("mean").shape(), (shape_t{0}));
  EXPECT_EQ(vars.get("var").shape(), (shape_t{0}));
  vars.var("dy") = tensor::zeros(pe::dtype::fp32, {0, 3, 4});
  vars.var("dscale") = random_tensor({12}, 33); // stale values to be overwritten
  run_op(ln_grad_op(true, true, {"X", "Scale", "Bias"}, {}), vars);
  EXPECT_EQ(vars.get("dx").shape(), (shape_t{0, 3, 4}));
  EXPECT_TRUE(tensor_is(vars.get("dscale"), {12}, std::vector<float>(12, 0.f)));
  EXPECT_TRUE(tensor_is(vars.get("dbias"), {12}, std::vector<float>(12, 0.f)));
}

TEST(LayerNormGrad, ComputesOnlyTheBoundOutputs) {
  const attr_list attrs = axis_attrs(2);
  pe::scope vars;
  vars.var("x") = random_tensor({2, 3, 4}, 41, -2.f, 2.f);
  vars.var("scale") = random_tensor({4}, 42, 0.5f, 1.5f);
  vars.var("bias") = random_tensor({4}, 43);
  vars.var("dy") = random_tensor({2, 3, 4}, 44);
  run_op(ln_op(true, true, attrs), vars);
  run_op(ln_grad_op(true, true, {"X", "Scale", "Bias"}, attrs), vars);
  const tensor dx = vars.get("dx").clone(), dscale = vars.get("dscale").clone(),
               dbias = vars.get("dbias").clone();
  EXPECT_EQ(dscale.shape(), (shape_t{4}));
  // Bias@GRAD is the column sum of Y@GRAD.
  std::vector<float> sums(4, 0.f);
  for (std::int64_t i = 0; i < 24; ++i) sums[i % 4] += vars.get("dy").data<float>()[i];
  EXPECT_TRUE(tensor_is(dbias, {4}, sums));
  for (const std::vector<std::string>& outputs :
       {std::vector<std::string>{"X"}, std::vector<std::string>{"Scale"},
        std::vector<std::string>{"Bias"}, std::vector<std::string>{"Scale", "Bias"}}) {
    SCOPED_TRACE(::testing::PrintToString(outputs));
    pe::scope only;
    for (const char* v : {"x", "scale", "bias", "dy", "mean", "var"}) only.var(v) = vars.get(v).clone();
    run_op(ln_grad_op(true, true, outputs, attrs), only);
    EXPECT_EQ(only.find("dx") != nullptr, outputs.front() == "X");
    for (const std::string& slot : outputs) {
      const tensor& expected = slot == "X" ? dx : slot == "Scale" ? dscale : dbias;
      EXPECT_TRUE(tensor_is(only.get(grad_var(slot)), expected, 0.f)) << slot;
    }
  }
}

// The gradient checker's central differences see Y rounded to FP32, and X@GRAD is a
// difference of nearly equal terms (the row statistics depend on X): over 40 random inputs
// like these the worst element was off by 0.8% with delta 1e-2 (with the default 5e-3, 1.2%:
// the error shrinks as delta grows until the curvature of short rows takes over), so this
// check takes a 1e-2 bound; MatchesDifferencesOfTheDoubleReference pins the values down to
// 1e-5.
TEST(LayerNormGrad, MatchesCentralDifferences) {
  for (const std::int32_t axis : {1, 2}) {
    const std::int64_t n = axis == 1 ? 12 : 4;
    SCOPED_TRACE("begin_norm_axis " + std::to_string(axis));
    const tensor x = random_tensor({2, 3, 4}, 51, -2.f, 2.f);
    const auto check = [&](std::map<std::string, std::vector<tensor>> inputs,
                           std::vector<std::string> slots) {
      return gradient_matches({.op_type = "layer_norm",
                               .inputs = std::move(inputs),
                               .attrs = axis_attrs(axis),
                               .check_slots = std::move(slots),
                               .loss_outputs = {"Y"},
                               .extra_outputs = {"Mean", "Variance"},
                               .delta = 1e-2f},
                              1e-2);
    };
    EXPECT_TRUE(check({{"X", {x}},
                       {"Scale", {random_tensor({n}, 52, 0.5f, 1.5f)}},
                       {"Bias", {random_tensor({n}, 53)}}},
                      {"X", "Scale", "Bias"}));
    // Without Scale and Bias (Scale counts as 1 in X@GRAD), and with Scale alone.
    EXPECT_TRUE(check({{"X", {x}}}, {"X"}));
    EXPECT_TRUE(check({{"X", {x}}, {"Scale", {random_tensor({n}, 54, -1.5f, 1.5f)}}},
                      {"X", "Scale"}));
  }
}

TEST(LayerNormGrad, MatchesDifferencesOfTheDoubleReference) {
  // L = sum of Y@GRAD * Y over reference() in double, differentiated by central differences
  // with step 1e-5 (no FP32 rounding in the way: their error is far below 1e-8), against
  // the kernel's X@GRAD, Scale@GRAD and Bias@GRAD within 1e-5. Y@GRAD of both signs.
  for (const std::int32_t axis : {1, 2})
    for (const bool with_params : {true, false}) {
      const std::int64_t n = axis == 1 ? 12 : 4;
      SCOPED_TRACE("begin_norm_axis " + std::to_string(axis) + (with_params ? ", Scale and Bias" : ""));
      const attr_list attrs = axis_attrs(axis);
      pe::scope vars;
      vars.var("x") = random_tensor({2, 3, 4}, 71, -2.f, 2.f);
      vars.var("scale") = random_tensor({n}, 72, -1.5f, 1.5f);
      vars.var("bias") = random_tensor({n}, 73);
      vars.var("dy") = random_tensor({2, 3, 4}, 74);
      run_op(ln_op(with_params, with_params, attrs), vars);
      run_op(ln_grad_op(with_params, with_params, {"X", "Scale", "Bias"}, attrs), vars);

      std::vector<double> x = doubles(vars.get("x")), scale = doubles(vars.get("scale")),
                          bias = doubles(vars.get("bias"));
      if (!with_params) scale.clear(), bias.clear();
      const std::vector<double> dy = doubles(vars.get("dy"));
      const auto loss = [&] {
        const ln_reference r = reference(x, n, scale, bias, 1e-5);
        double l = 0;
        for (std::size_t i = 0; i < dy.size(); ++i) l += dy[i] * r.y[i];
        return l;
      };
      const auto differences = [&](std::vector<double>& of) {
        std::vector<double> d;
        for (double& v : of) {
          const double saved = v, h = 1e-5;
          v = saved + h;
          const double up = loss();
          v = saved - h;
          const double down = loss();
          v = saved;
          d.push_back((up - down) / (2 * h));
        }
        return floats(d);
      };
      EXPECT_TRUE(tensor_is(vars.get("dx"), {2, 3, 4}, differences(x)));
      if (!with_params) {
        // Scale@GRAD and Bias@GRAD of an op without them: the grads of a Scale of ones and
        // a Bias of zeros, [N].
        scale.assign(static_cast<std::size_t>(n), 1.0);
        bias.assign(static_cast<std::size_t>(n), 0.0);
      }
      EXPECT_TRUE(tensor_is(vars.get("dscale"), {n}, differences(scale)));
      EXPECT_TRUE(tensor_is(vars.get("dbias"), {n}, differences(bias)));
    }
}

TEST(LayerNorm, GradMakerAsPaddle) {
  const attr_list attrs = axis_attrs(2);
  const pe::op_schema& schema = *pe::op_registry::global().find("layer_norm");
  const auto grad = schema.make_grad(ln_op(true, true, attrs)).at(0);
  EXPECT_EQ(grad.type(), "layer_norm_grad");
  const std::vector<std::pair<std::string, std::string>> params = {
      {"X", "x"}, {"Scale", "scale"}, {"Bias", "bias"}};
  for (const auto& [slot, var] : params) {
    EXPECT_EQ(pe::input_args(grad, slot), std::vector<std::string>{var}) << slot;
    EXPECT_EQ(pe::output_args(grad, slot + "@GRAD"), std::vector<std::string>{var + "@GRAD"})
        << slot;
  }
  for (const auto& [slot, var] : std::vector<std::pair<std::string, std::string>>{
           {"Mean", "mean"}, {"Variance", "var"}, {"Y@GRAD", "y@GRAD"}})
    EXPECT_EQ(pe::input_args(grad, slot), std::vector<std::string>{var}) << slot;
  EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "begin_norm_axis")),
            pe::attribute(std::int32_t{2}));

  const pe::var_table vars = {
      {"x", {pe::dtype::fp32, {-1, 3, 4}}}, {"scale", {pe::dtype::fp32, {4}}},
      {"bias", {pe::dtype::fp32, {4}}},     {"mean", {pe::dtype::fp32, {-1}}},
      {"var", {pe::dtype::fp32, {-1}}},     {"y@GRAD", {pe::dtype::fp32, {-1, 3, 4}}}};
  const auto dims = infer(grad, vars);
  EXPECT_EQ(dims.at("x@GRAD").dims, (shape_t{-1, 3, 4}));
  EXPECT_EQ(dims.at("scale@GRAD").dims, (shape_t{4}));
  EXPECT_EQ(dims.at("bias@GRAD").dims, (shape_t{4}));

  // Without Scale and Bias the grad op neither reads them nor writes their grads.
  const auto bare = schema.make_grad(ln_op(false, false, attrs)).at(0);
  for (const char* slot : {"Scale", "Bias"}) {
    EXPECT_TRUE(pe::input_args(bare, slot).empty()) << slot;
    EXPECT_TRUE(pe::output_args(bare, std::string(slot) + "@GRAD").empty()) << slot;
  }
  EXPECT_EQ(pe::output_args(bare, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(infer(bare, vars).at("x@GRAD").dims, (shape_t{-1, 3, 4}));
}

TEST(LayerNorm, AppendBackwardEmitsItsGrad) {
  // loss = mean(layer_norm(x) with Scale 1 and Bias 0, begin_norm_axis 2): every element
  // weighs 1 / 24, so Bias@GRAD = 6 rows / 24 and Scale@GRAD[j] = sum of xhat[., j] / 24.
  pe::proto::ProgramDesc main, startup;
  pe::program_builder b(main, startup, 1);
  const std::string x = b.data("x", {-1, 3, 4}, pe::dtype::fp32);
  const std::string scale = b.parameter("ln.scale", {4}, pe::program_builder::init::one);
  const std::string bias = b.parameter("ln.bias", {4}, pe::program_builder::init::zero);
  b.append_op("layer_norm", {{"X", {x}}, {"Scale", {scale}}, {"Bias", {bias}}},
              {{"Y", {"ln.y"}}, {"Mean", {"ln.mean"}}, {"Variance", {"ln.var"}}},
              {{"begin_norm_axis", std::int32_t{2}}, {"epsilon", 1e-5f}});
  const auto grads = pe::append_backward(main, b.mean("ln.y"));
  std::vector<std::string> params;
  for (const auto& [param, grad] : grads) params.push_back(param);
  std::sort(params.begin(), params.end());
  EXPECT_EQ(params, (std::vector<std::string>{bias, scale}));
  std::vector<std::string> types;
  for (const auto& op : main.blocks(0).ops()) types.push_back(op.type());
  EXPECT_EQ(std::count(types.begin(), types.end(), "layer_norm_grad"), 1)
      << ::testing::PrintToString(types);
  const pe::var_table declared = pe::validate_program(main);
  EXPECT_EQ(declared.at("ln.mean").dims, (shape_t{-1, 3})); // X [-1, 3, 4] before axis 2
  EXPECT_EQ(declared.at(pe::grad_name(scale)).dims, (shape_t{4}));

  pe::scope vars;
  pe::reference_executor(startup, vars).run({}, {});
  const tensor feed = random_tensor({2, 3, 4}, 61, -2.f, 2.f);
  const auto out =
      pe::reference_executor(main, vars).run({{x, feed}}, {pe::grad_name(scale), pe::grad_name(bias)});
  ASSERT_EQ(out.size(), 2u);
  const ln_reference r = reference(feed, 4, nullptr, nullptr, 1e-5);
  std::vector<float> dscale(4, 0.f);
  for (std::size_t i = 0; i < r.y.size(); ++i) dscale[i % 4] += static_cast<float>(r.y[i] / 24);
  EXPECT_TRUE(tensor_is(out[0], {4}, dscale));
  EXPECT_TRUE(tensor_is(out[1], {4}, std::vector<float>(4, 0.25f)));
}

TEST(LayerNorm, InfersShapes) {
  const pe::var_table vars = {
      {"x", {pe::dtype::fp32, {-1, 5, 8}}}, {"x3", {pe::dtype::fp32, {3, 5, 8}}},
      {"s8", {pe::dtype::fp32, {8}}},       {"s40", {pe::dtype::fp32, {40}}},
      {"s58", {pe::dtype::fp32, {5, 8}}}};
  auto dims = infer(ln_op_at("x", "s8", "s8", 2), vars);
  EXPECT_EQ(dims.at("y").dims, (shape_t{-1, 5, 8}));
  // Mean and Variance: X's dims before begin_norm_axis (Paddle 2.6's LayerNormInferMeta, as
  // the programs it writes declare them), not their product.
  EXPECT_EQ(dims.at("mean").dims, (shape_t{-1, 5}));
  EXPECT_EQ(dims.at("var").dims, (shape_t{-1, 5}));
  dims = infer(ln_op_at("x3", "s8", nullptr, 2), vars);
  EXPECT_EQ(dims.at("mean").dims, (shape_t{3, 5}));
  // begin_norm_axis 1: N = 40, which Scale [40] and Bias [5, 8] both hold.
  dims = infer(ln_op_at("x3", "s40", "s58", 1), vars);
  EXPECT_EQ(dims.at("y").dims, (shape_t{3, 5, 8}));
  EXPECT_EQ(dims.at("var").dims, (shape_t{3}));
  EXPECT_EQ(infer(ln_op_at("x", nullptr, nullptr, 1), vars).at("mean").dims, (shape_t{-1}));
}

TEST(LayerNorm, RefusesBadAxesParametersAndDtypes) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {3, 5, 8}}},
                              {"xi", {pe::dtype::int64, {3, 5, 8}}},
                              {"s8", {pe::dtype::fp32, {8}}},
                              {"s7", {pe::dtype::fp32, {7}}}};
  // Shape inference (a program's validation).
  for (const std::int32_t axis : {0, 3, -1}) {
    const std::string message = infer_error(ln_op_at("x", nullptr, nullptr, axis), vars);
    EXPECT_TRUE(contains(message, "op #0 (layer_norm): begin_norm_axis " + std::to_string(axis) +
                                      " is out of range for X [3, 5, 8] of rank 3 (valid: [1, 3))"))
        << message;
  }
  using bad_param = std::tuple<std::string, const char*, const char*>; // slot, Scale, Bias
  for (const auto& [slot, scale, bias] :
       std::vector<bad_param>{{"Scale", "s7", "s8"}, {"Bias", "s8", "s7"}}) {
    const std::string message = infer_error(ln_op_at("x", scale, bias, 2), vars);
    EXPECT_TRUE(contains(message, "op #0 (layer_norm): " + slot +
                                      " must have N = 8 elements (the product of X's dims from "
                                      "begin_norm_axis on), got [7]"))
        << message;
  }
  EXPECT_TRUE(contains(infer_error(ln_op_at("xi", nullptr, nullptr, 1), vars),
                       "op #0 (layer_norm): X must be FP32, got INT64"));
  EXPECT_TRUE(contains(infer_error(ln_op_at("x", "xi", nullptr, 1), vars), "Scale must be FP32, got INT64"));

  // The kernels apply the same rules.
  pe::scope scope;
  scope.var("x") = tensor::zeros(pe::dtype::fp32, {3, 5, 8});
  scope.var("scale") = tensor::zeros(pe::dtype::fp32, {7});
  scope.var("bias") = tensor::zeros(pe::dtype::fp32, {8});
  std::string message = error_of(ln_op(false, false, axis_attrs(3)), scope);
  EXPECT_TRUE(contains(message, "layer_norm: begin_norm_axis 3 is out of range for X [3, 5, 8]"))
      << message;
  message = error_of(ln_op(true, true, axis_attrs(2)), scope);
  EXPECT_TRUE(contains(message, "layer_norm: Scale must have N = 8 elements")) << message;
  scope.var("x") = tensor::zeros(pe::dtype::int64, {3, 5, 8});
  message = error_of(ln_op(false, false), scope);
  EXPECT_TRUE(contains(message, "layer_norm: X must be FP32, got INT64")) << message;

  // The grad checks the statistics it is handed against X's rows.
  scope.var("x") = tensor::zeros(pe::dtype::fp32, {3, 5, 8});
  scope.var("dy") = tensor::zeros(pe::dtype::fp32, {3, 5, 8});
  scope.var("mean") = tensor::zeros(pe::dtype::fp32, {3});
  scope.var("var") = tensor::zeros(pe::dtype::fp32, {15});
  message = error_of(ln_grad_op(false, false, {"X"}, axis_attrs(2)), scope);
  EXPECT_TRUE(contains(message, "layer_norm_grad: Mean must hold left = 15 elements")) << message;
  const pe::var_table grad_vars = {{"x", {pe::dtype::fp32, {3, 5, 8}}},
                                   {"dy", {pe::dtype::fp32, {3, 5, 8}}},
                                   {"mean", {pe::dtype::fp32, {3}}},
                                   {"var", {pe::dtype::fp32, {15}}}};
  message = infer_error(ln_grad_op(false, false, {"X"}, axis_attrs(2)), grad_vars);
  EXPECT_TRUE(contains(message, "op #0 (layer_norm_grad): Mean must be [left] = [15] or X's dims "
                                "before begin_norm_axis [3, 5]"))
      << message;
  // Both forms are the grad's statistics: [left] and X's leading dims.
  const pe::var_table both = {{"x", {pe::dtype::fp32, {3, 5, 8}}},
                              {"dy", {pe::dtype::fp32, {3, 5, 8}}},
                              {"mean", {pe::dtype::fp32, {15}}},
                              {"var", {pe::dtype::fp32, {3, 5}}}};
  EXPECT_EQ(infer_error(ln_grad_op(false, false, {"X"}, axis_attrs(2)), both), "");
}

} // namespace

// batch_norm: training forward and running statistics against a naive loop and against
// numbers Paddle 2.6 computed, MeanOut / VarianceOut in place on Mean / Variance, is_test and
// use_global_stats, rank-2 input, the grad maker, shape inference, the errors users see, and
// gradients (training and global statistics) against central differences.
#include <algorithm>
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

/// batch_norm with MeanOut and VarianceOut on Mean and Variance, as Paddle binds them.
pe::proto::OpDesc bn_op(const attr_list& attrs = {}) {
  return make_op(
      "batch_norm",
      {{"X", "x"}, {"Scale", "scale"}, {"Bias", "bias"}, {"Mean", "mean"}, {"Variance", "var"}},
      {{"Y", "y"},
       {"MeanOut", "mean"},
       {"VarianceOut", "var"},
       {"SavedMean", "saved_mean"},
       {"SavedVariance", "saved_var"},
       {"ReserveSpace", "reserve"}},
      attrs);
}

/// Per-channel batch statistics of X [N, C, ...]: mean and biased variance.
struct channel_stats {
  std::vector<double> mean, var;
};

channel_stats stats_of(const tensor& x) {
  const std::int64_t n = x.dim(0), c = x.dim(1), s = x.numel() / (n * c);
  channel_stats st{std::vector<double>(c, 0), std::vector<double>(c, 0)};
  const float* xs = x.data<float>();
  for (std::int64_t k = 0; k < c; ++k) {
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t i = 0; i < s; ++i) st.mean[k] += xs[(b * c + k) * s + i];
    st.mean[k] /= static_cast<double>(n * s);
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t i = 0; i < s; ++i) {
        const double d = xs[(b * c + k) * s + i] - st.mean[k];
        st.var[k] += d * d;
      }
    st.var[k] /= static_cast<double>(n * s);
  }
  return st;
}

/// Y = (X - mean) / sqrt(var + eps) * scale + bias per channel.
std::vector<float> normalized(const tensor& x, const std::vector<double>& mean,
                              const std::vector<double>& var, const tensor& scale,
                              const tensor& bias, double eps) {
  const std::int64_t n = x.dim(0), c = x.dim(1), s = x.numel() / (n * c);
  std::vector<float> y(static_cast<std::size_t>(x.numel()));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t k = 0; k < c; ++k)
      for (std::int64_t i = 0; i < s; ++i) {
        const std::int64_t e = (b * c + k) * s + i;
        y[e] = static_cast<float>((x.data<float>()[e] - mean[k]) / std::sqrt(var[k] + eps) *
                                      scale.data<float>()[k] +
                                  bias.data<float>()[k]);
      }
  return y;
}

std::vector<float> floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

struct bn_run {
  pe::scope vars;
  tensor x, scale, bias, mean, var;
};

/// Fills x, scale, bias, mean, var (random; var positive) and runs batch_norm with `attrs`.
void run_bn(bn_run& r, const shape_t& x_dims, const attr_list& attrs, std::uint64_t seed) {
  const std::int64_t c = x_dims[1];
  r.x = random_tensor(x_dims, seed, -2.f, 3.f);
  r.scale = random_tensor({c}, seed + 1, 0.5f, 1.5f);
  r.bias = random_tensor({c}, seed + 2);
  r.mean = random_tensor({c}, seed + 3);
  r.var = random_tensor({c}, seed + 4, 0.5f, 2.f);
  r.vars.var("x") = r.x.clone();
  r.vars.var("scale") = r.scale.clone();
  r.vars.var("bias") = r.bias.clone();
  r.vars.var("mean") = r.mean.clone();
  r.vars.var("var") = r.var.clone();
  run_op(bn_op(attrs), r.vars);
}

TEST(BatchNorm, TrainingNormalisesWithBatchStatistics) {
  // 8 and 16 channels: the channel-blocked layout of the oneDNN kernels (nChw8c / nChw16c);
  // planes of 8 floats or more ({4, 3, 5, 2}, {2, 3, 2, 2, 3}, {2, 16, 4, 4}): the
  // channel-by-channel loops (kernels/cpu/norm_planes.hpp).
  for (const shape_t& dims : {shape_t{4, 3, 5, 2}, shape_t{6, 4}, shape_t{2, 3, 2, 2, 3},
                              shape_t{3, 8, 2, 3}, shape_t{2, 16, 3, 2}, shape_t{2, 16, 4, 4}}) {
    SCOPED_TRACE(pe::to_string(dims));
    bn_run r;
    run_bn(r, dims, {{"momentum", 0.8f}, {"epsilon", 1e-3f}}, 7);
    const channel_stats st = stats_of(r.x);
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("y"), dims,
                                       normalized(r.x, st.mean, st.var, r.scale, r.bias, 1e-3)));
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("saved_mean"), {dims[1]}, floats(st.mean)));
    std::vector<double> inv_std, running_mean, running_var;
    for (std::size_t k = 0; k < st.mean.size(); ++k) {
      inv_std.push_back(1 / std::sqrt(st.var[k] + 1e-3));
      // Paddle's CPU convention: the biased batch variance enters the running variance.
      running_mean.push_back(0.8 * r.mean.data<float>()[k] + 0.2 * st.mean[k]);
      running_var.push_back(0.8 * r.var.data<float>()[k] + 0.2 * st.var[k]);
    }
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("saved_var"), {dims[1]}, floats(inv_std)));
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("mean"), {dims[1]}, floats(running_mean)));
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("var"), {dims[1]}, floats(running_var)));
  }
}

TEST(BatchNorm, MatchesPaddleAfterOneStep) {
  // paddle.static.nn.batch_norm(x, momentum=0.9) in Paddle 2.6.2, one training step from the
  // initial Scale 1, Bias 0, Mean 0, Variance 1, x = arange(8) ** 1.5 as [2, 2, 2, 1].
  pe::scope vars;
  std::vector<float> x;
  for (int i = 0; i < 8; ++i) x.push_back(std::pow(static_cast<float>(i), 1.5f));
  vars.var("x") = tensor::from_vector(x, {2, 2, 2, 1});
  vars.var("scale") = tensor::from_vector<float>({1, 1}, {2});
  vars.var("bias") = tensor::from_vector<float>({0, 0}, {2});
  vars.var("mean") = tensor::from_vector<float>({0, 0}, {2});
  vars.var("var") = tensor::from_vector<float>({1, 1}, {2});
  run_op(bn_op(), vars);
  EXPECT_TRUE(pe::testing::tensor_is(
      vars.get("y"), {2, 2, 2, 1},
      {-1.0744653940200806f, -0.8614926934242249f, -1.151832938194275f, -0.7873291373252869f,
       0.6293163299560547f, 1.306641936302185f, 0.6752868890762329f, 1.263875126838684f}));
  EXPECT_TRUE(
      pe::testing::tensor_is(vars.get("mean"), {2}, {0.5045086145401001f, 1.031044602394104f}));
  EXPECT_TRUE(
      pe::testing::tensor_is(vars.get("var"), {2}, {3.10471248626709f, 5.119475364685059f}));
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("saved_mean"), {2},
                                     {5.0450849533081055f, 10.310443878173828f}));
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("saved_var"), {2},
                                     {0.2129727154970169f, 0.15394684672355652f}));
}

TEST(BatchNorm, GlobalStatisticsUseAndKeepTheRunningOnes) {
  for (const attr_list& attrs :
       {attr_list{{"is_test", true}}, attr_list{{"use_global_stats", true}}}) {
    SCOPED_TRACE(attrs.front().first);
    bn_run r;
    run_bn(r, {3, 2, 4, 3}, attrs, 21);
    const std::vector<double> mean(r.mean.values<float>().begin(), r.mean.values<float>().end());
    const std::vector<double> var(r.var.values<float>().begin(), r.var.values<float>().end());
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("y"), {3, 2, 4, 3},
                                       normalized(r.x, mean, var, r.scale, r.bias, 1e-5)));
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("mean"), {2}, floats(mean)));
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("var"), {2}, floats(var)));
  }
  // is_test with trainable_statistics computes batch statistics, as in Paddle.
  bn_run r;
  run_bn(r, {3, 2, 4, 3}, {{"is_test", true}, {"trainable_statistics", true}}, 22);
  const channel_stats st = stats_of(r.x);
  EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("y"), {3, 2, 4, 3},
                                     normalized(r.x, st.mean, st.var, r.scale, r.bias, 1e-5)));
}

TEST(BatchNorm, APlaceWithoutRowsKeepsItsRunningStatistics) {
  // An uneven split can leave a place no rows: nothing to normalise, and its running
  // statistics must not take the mean of nothing (0 / 0, or whatever memory held).
  for (const shape_t& dims : {shape_t{0, 3, 4, 4}, shape_t{0, 8, 2, 2}, shape_t{0, 5}}) {
    SCOPED_TRACE(pe::to_string(dims));
    bn_run r;
    run_bn(r, dims, {{"momentum", 0.8f}}, 51);
    const std::int64_t c = dims[1];
    EXPECT_EQ(r.vars.get("y").shape(), dims);
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("mean"), r.mean));
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("var"), r.var));
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("saved_mean"), {c}, std::vector<float>(c, 0.f)));
    EXPECT_TRUE(pe::testing::tensor_is(r.vars.get("saved_var"), {c}, std::vector<float>(c, 0.f)));
  }
}

TEST(BatchNorm, SeparateRunningOutputs) {
  // MeanOut and VarianceOut bound to their own variables leave Mean and Variance alone.
  pe::scope vars;
  vars.var("x") = random_tensor({4, 2}, 31);
  vars.var("scale") = tensor::from_vector<float>({1, 1}, {2});
  vars.var("bias") = tensor::from_vector<float>({0, 0}, {2});
  vars.var("mean") = tensor::from_vector<float>({1, 2}, {2});
  vars.var("var") = tensor::from_vector<float>({3, 4}, {2});
  run_op(
      make_op(
          "batch_norm",
          {{"X", "x"}, {"Scale", "scale"}, {"Bias", "bias"}, {"Mean", "mean"}, {"Variance", "var"}},
          {{"Y", "y"},
           {"MeanOut", "mean_out"},
           {"VarianceOut", "var_out"},
           {"SavedMean", "sm"},
           {"SavedVariance", "sv"}},
          {{"is_test", true}}),
      vars);
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("mean"), {2}, {1, 2}));
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("mean_out"), {2}, {1, 2}));
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("var_out"), {2}, {3, 4}));
}

// X@GRAD is a difference of nearly equal terms (the batch statistics depend on X), so the
// FP32 rounding of Y dominates the central differences: a larger delta and a 3e-3 bound (the
// error shrinks as delta grows, i.e. it is noise, not a wrong gradient).
TEST(BatchNormGrad, MatchesCentralDifferences) {
  const std::vector<std::string> stats = {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
  // {2, 8, 3, 2}: the channel-blocked layout of the oneDNN kernels (with AVX2). Planes of 8
  // floats and more (the channel-by-channel loops) make X@GRAD's terms cancel below what
  // FP32 central differences resolve, on either route: MatchesItsFormulaOnBothRoutes.
  for (const shape_t& dims : {shape_t{3, 2, 3, 2}, shape_t{5, 3}, shape_t{2, 8, 3, 2}}) {
    SCOPED_TRACE(pe::to_string(dims));
    const std::int64_t c = dims[1];
    for (const attr_list& attrs : {attr_list{}, attr_list{{"use_global_stats", true}}}) {
      SCOPED_TRACE(attrs.empty() ? "training" : "global statistics");
      EXPECT_TRUE(gradient_matches({.op_type = "batch_norm",
                                    .inputs = {{"X", {random_tensor(dims, 41, -2.f, 2.f)}},
                                               {"Scale", {random_tensor({c}, 42, 0.5f, 1.5f)}},
                                               {"Bias", {random_tensor({c}, 43)}},
                                               {"Mean", {random_tensor({c}, 44)}},
                                               {"Variance", {random_tensor({c}, 45, 0.5f, 2.f)}}},
                                    .attrs = attrs,
                                    .check_slots = {"X", "Scale", "Bias"},
                                    .loss_outputs = {"Y"},
                                    .extra_outputs = stats,
                                    .delta = 2e-2f},
                                   3e-3));
    }
  }
}

/// Every element of `got` within `tolerance` of `want`, relative to `want`'s largest
/// magnitude (X@GRAD's small elements are differences of nearly equal terms).
::testing::AssertionResult close_to(const tensor& got, const std::vector<double>& want, double tolerance) {
  if (static_cast<std::size_t>(got.numel()) != want.size())
    return ::testing::AssertionFailure() << got.numel() << " elements, expected " << want.size();
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::abs(got.data<float>()[i] - want[i]) > tolerance * scale)
      return ::testing::AssertionFailure() << "element " << i << ": " << got.data<float>()[i] << ", expected "
                                           << want[i];
  return ::testing::AssertionSuccess();
}

// batch_norm_grad against its formula in double, from the statistics the forward saved
// (training) or the running ones with epsilon (global statistics), on each route of the CPU
// kernel: oneDNN for planes under 8 floats, the channel-by-channel loops from 8.
TEST(BatchNormGrad, MatchesItsFormulaOnBothRoutes) {
  for (const shape_t& dims : {shape_t{2, 8, 3, 2}, shape_t{2, 3, 4, 4}, shape_t{3, 5, 9}}) {
    for (const bool global : {false, true}) {
      SCOPED_TRACE(pe::to_string(dims) + (global ? " global statistics" : " training"));
      const attr_list attrs = global ? attr_list{{"use_global_stats", true}, {"epsilon", 1e-3f}}
                                     : attr_list{{"epsilon", 1e-3f}};
      bn_run r;
      run_bn(r, dims, attrs, 51);
      const tensor dy = random_tensor(dims, 57, -1.f, 1.f);
      r.vars.var("y@GRAD") = dy.clone();
      run_op(pe::op_registry::global().find("batch_norm")->make_grad(bn_op(attrs)).at(0), r.vars);

      const std::int64_t n = dims[0], c = dims[1], s = r.x.numel() / (n * c);
      const float* x = r.x.data<float>();
      const float* g = dy.data<float>();
      // What the grad reads: SavedMean and the inverse std SavedVariance, or under global
      // statistics MeanOut and VarianceOut (unchanged by the forward).
      const tensor& mean = r.vars.get(global ? "mean" : "saved_mean");
      std::vector<double> inv_std(static_cast<std::size_t>(c));
      for (std::int64_t k = 0; k < c; ++k)
        inv_std[k] = global ? 1 / std::sqrt(static_cast<double>(r.vars.get("var").data<float>()[k]) + 1e-3)
                            : r.vars.get("saved_var").data<float>()[k];
      std::vector<double> dbias(c, 0), dscale(c, 0), dx(static_cast<std::size_t>(r.x.numel()));
      const auto at = [&](std::int64_t b, std::int64_t k, std::int64_t i) { return (b * c + k) * s + i; };
      for (std::int64_t k = 0; k < c; ++k) {
        const double m = mean.data<float>()[k], count = static_cast<double>(n * s);
        for (std::int64_t b = 0; b < n; ++b)
          for (std::int64_t i = 0; i < s; ++i) {
            dbias[k] += g[at(b, k, i)];
            dscale[k] += g[at(b, k, i)] * (x[at(b, k, i)] - m) * inv_std[k];
          }
        for (std::int64_t b = 0; b < n; ++b)
          for (std::int64_t i = 0; i < s; ++i) {
            const double xhat = (x[at(b, k, i)] - m) * inv_std[k];
            const double rest = global ? g[at(b, k, i)] : g[at(b, k, i)] - dbias[k] / count - xhat * dscale[k] / count;
            dx[at(b, k, i)] = r.scale.data<float>()[k] * inv_std[k] * rest;
          }
      }
      EXPECT_TRUE(close_to(r.vars.get("x@GRAD"), dx, 1e-5));
      EXPECT_TRUE(close_to(r.vars.get("scale@GRAD"), dscale, 1e-5));
      EXPECT_TRUE(close_to(r.vars.get("bias@GRAD"), dbias, 1e-5));
    }
  }
}

TEST(BatchNorm, GradMakerAsPaddle) {
  const auto grad = pe::op_registry::global().find("batch_norm")->make_grad(bn_op()).at(0);
  EXPECT_EQ(grad.type(), "batch_norm_grad");
  for (const auto& [slot, var] :
       std::vector<std::pair<std::string, std::string>>{{"X", "x"},
                                                        {"Scale", "scale"},
                                                        {"Bias", "bias"},
                                                        {"SavedMean", "saved_mean"},
                                                        {"SavedVariance", "saved_var"},
                                                        {"MeanOut", "mean"},
                                                        {"VarianceOut", "var"},
                                                        {"ReserveSpace", "reserve"},
                                                        {"Y@GRAD", "y@GRAD"}})
    EXPECT_EQ(pe::input_args(grad, slot), std::vector<std::string>{var}) << slot;
  for (const char* slot : {"X", "Scale", "Bias"})
    EXPECT_EQ(pe::output_args(grad, std::string(slot) + "@GRAD").size(), 1u) << slot;
  const pe::var_table vars = {
      {"x", {pe::dtype::fp32, {-1, 6, 14, 14}}}, {"scale", {pe::dtype::fp32, {6}}},
      {"bias", {pe::dtype::fp32, {6}}},          {"saved_mean", {pe::dtype::fp32, {6}}},
      {"saved_var", {pe::dtype::fp32, {6}}},     {"y@GRAD", {pe::dtype::fp32, {-1, 6, 14, 14}}}};
  const auto dims = infer(grad, vars);
  EXPECT_EQ(dims.at("x@GRAD").dims, (shape_t{-1, 6, 14, 14}));
  EXPECT_EQ(dims.at("scale@GRAD").dims, (shape_t{6}));
  EXPECT_EQ(dims.at("bias@GRAD").dims, (shape_t{6}));
}

TEST(BatchNorm, InfersShapesAndRejectsWhatItDoesNotImplement) {
  pe::var_table vars = {
      {"x", {pe::dtype::fp32, {-1, 6, 14, 14}}}, {"scale", {pe::dtype::fp32, {6}}},
      {"bias", {pe::dtype::fp32, {6}}},          {"mean", {pe::dtype::fp32, {6}}},
      {"var", {pe::dtype::fp32, {6}}},           {"m", {pe::dtype::fp32, {1}}}};
  const auto dims = infer(bn_op({{"use_mkldnn", false}}), vars);
  EXPECT_EQ(dims.at("y").dims, (shape_t{-1, 6, 14, 14}));
  for (const char* v : {"mean", "var", "saved_mean", "saved_var"})
    EXPECT_EQ(dims.at(v).dims, (shape_t{6})) << v;
  EXPECT_EQ(dims.at("reserve").dims, (shape_t{0}));

  const auto message = [&](const pe::proto::OpDesc& op) { return infer_error(op, vars); };
  EXPECT_NE(message(bn_op({{"data_layout", std::string("NHWC")}}))
                .find("op #0 (batch_norm): data_layout 'NHWC' is not supported; only NCHW"),
            std::string::npos);
  EXPECT_NE(
      message(bn_op({{"fuse_with_relu", true}})).find("fuse_with_relu = true is not supported"),
      std::string::npos);
  pe::proto::OpDesc with_momentum = bn_op();
  pe::set_input(with_momentum, "MomentumTensor", {"m"});
  EXPECT_NE(message(with_momentum).find("the MomentumTensor input is not supported"),
            std::string::npos);
  vars["scale"].dims = {5};
  EXPECT_NE(message(bn_op()).find("Scale must be [C] = [6], got [5]"), std::string::npos);
  vars["x"].dims = {6};
  EXPECT_NE(message(bn_op()).find("X must have rank 2 to 5 ([N, C, ...]), got [6]"),
            std::string::npos);

  // The kernel checks the channel inputs too.
  pe::scope scope;
  scope.var("x") = tensor::zeros(pe::dtype::fp32, {2, 3});
  for (const char* v : {"scale", "bias", "mean", "var"})
    scope.var(v) = tensor::zeros(pe::dtype::fp32, {2});
  EXPECT_NE(error_of(bn_op(), scope).find("Scale"), std::string::npos);
}

} // namespace

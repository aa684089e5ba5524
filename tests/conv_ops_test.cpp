// conv2d and depthwise_conv2d: forward against a naive loop over strides, paddings (2 and 4
// values), SAME / VALID, dilation and groups; one case against numbers Paddle 2.6 computed;
// the grad maker, a grad op without Input@GRAD, shape inference, the errors users see, and
// gradients against central differences.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph/attributes.hpp"
#include "graph/exec/scope.hpp"
#include "graph/op_registry.hpp"
#include "kernels/cpu/blas.hpp"
#include "kernels/cpu/dnnl_context.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::shape_t;
using pe::tensor;

/// A convolution's geometry, as the naive reference takes it.
struct conv_case {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
};

/// Output[n, m, oh, ow] = sum over the group's channels and the kernel of
/// Input[n, c, oh * s - pad + kh * d, ...] * Filter[m, c', kh, kw], zero outside the input.
tensor naive_conv(const tensor& x, const tensor& f, const conv_case& c) {
  const std::int64_t n = x.dim(0), channels = x.dim(1), h = x.dim(2), w = x.dim(3);
  const std::int64_t m = f.dim(0), cg = f.dim(1), kh = f.dim(2), kw = f.dim(3);
  const std::int64_t oh =
      (h + c.pad_top + c.pad_bottom - (c.dilation_h * (kh - 1) + 1)) / c.stride_h + 1;
  const std::int64_t ow =
      (w + c.pad_left + c.pad_right - (c.dilation_w * (kw - 1) + 1)) / c.stride_w + 1;
  const std::int64_t m_per_group = m / c.groups;
  EXPECT_EQ(cg * c.groups, channels);
  tensor out = tensor::zeros(pe::dtype::fp32, {n, m, oh, ow});
  const float* xs = x.data<float>();
  const float* fs = f.data<float>();
  float* os = out.data<float>();
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t o = 0; o < m; ++o)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          double sum = 0;
          for (std::int64_t k = 0; k < cg; ++k) {
            const std::int64_t channel = o / m_per_group * cg + k;
            for (std::int64_t p = 0; p < kh; ++p)
              for (std::int64_t q = 0; q < kw; ++q) {
                const std::int64_t y = i * c.stride_h - c.pad_top + p * c.dilation_h;
                const std::int64_t z = j * c.stride_w - c.pad_left + q * c.dilation_w;
                if (y < 0 || y >= h || z < 0 || z >= w) continue;
                sum += static_cast<double>(xs[((b * channels + channel) * h + y) * w + z]) *
                       fs[((o * cg + k) * kh + p) * kw + q];
              }
          }
          os[((b * m + o) * oh + i) * ow + j] = static_cast<float>(sum);
        }
  return out;
}

pe::proto::OpDesc conv_op(const std::string& type, const attr_list& attrs) {
  return make_op(type, {{"Input", "x"}, {"Filter", "f"}}, {{"Output", "out"}}, attrs);
}

tensor run_conv(const std::string& type, const tensor& x, const tensor& f, const attr_list& attrs) {
  pe::scope vars;
  vars.var("x") = x.clone();
  vars.var("f") = f.clone();
  run_op(conv_op(type, attrs), vars);
  return vars.get("out");
}

/// oneDNN sums in another order than the naive loop: 1e-4 relative.
::testing::AssertionResult tensor_near(const tensor& got, const tensor& expected) {
  return pe::testing::tensor_is(got, expected, 1e-4f);
}

struct forward_case {
  const char* name;
  shape_t x, f;
  attr_list attrs;
  conv_case geometry;
};

TEST(Conv2d, MatchesNaiveLoop) {
  const std::vector<forward_case> cases = {
      {"plain", {2, 3, 6, 5}, {4, 3, 3, 3}, {}, {}},
      {"stride 2, paddings 1",
       {2, 3, 7, 6},
       {4, 3, 3, 2},
       {{"strides", ints{2, 2}}, {"paddings", ints{1, 1}}},
       {.stride_h = 2,
        .stride_w = 2,
        .pad_top = 1,
        .pad_bottom = 1,
        .pad_left = 1,
        .pad_right = 1}},
      {"4 paddings, strides 2 x 1",
       {1, 2, 6, 6},
       {3, 2, 3, 3},
       {{"strides", ints{2, 1}}, {"paddings", ints{1, 0, 2, 1}}},
       {.stride_h = 2, .pad_top = 1, .pad_bottom = 0, .pad_left = 2, .pad_right = 1}},
      {"dilation 2",
       {1, 2, 9, 8},
       {3, 2, 3, 3},
       {{"dilations", ints{2, 2}}, {"paddings", ints{1, 2}}},
       {.pad_top = 1,
        .pad_bottom = 1,
        .pad_left = 2,
        .pad_right = 2,
        .dilation_h = 2,
        .dilation_w = 2}},
      {"groups 2",
       {2, 4, 5, 5},
       {6, 2, 3, 3},
       {{"groups", std::int32_t{2}}, {"paddings", ints{1, 1}}},
       {.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .groups = 2}},
      // SAME: out = ceil(7 / 2) = 4, total padding (4 - 1) * 2 + 3 - 7 = 2 (1 + 1); Paddle
      // ignores the dilations under SAME.
      {"SAME",
       {1, 2, 7, 8},
       {2, 2, 3, 3},
       {{"strides", ints{2, 2}},
        {"padding_algorithm", std::string("SAME")},
        {"dilations", ints{2, 2}},
        {"paddings", ints{5, 5}}},
       {.stride_h = 2,
        .stride_w = 2,
        .pad_top = 1,
        .pad_bottom = 1,
        .pad_left = 0,
        .pad_right = 1}},
      {"VALID",
       {1, 2, 7, 7},
       {2, 2, 3, 3},
       {{"strides", ints{2, 2}},
        {"padding_algorithm", std::string("VALID")},
        {"paddings", ints{3, 3}}},
       {.stride_h = 2, .stride_w = 2}},
  };
  std::uint64_t seed = 1;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const tensor x = random_tensor(c.x, seed++);
    const tensor f = random_tensor(c.f, seed++);
    EXPECT_TRUE(tensor_near(run_conv("conv2d", x, f, c.attrs), naive_conv(x, f, c.geometry)));
  }
}

TEST(Conv2d, DepthwiseSharesTheKernel) {
  const tensor x = random_tensor({2, 3, 6, 6}, 11);
  const tensor f = random_tensor({6, 1, 3, 3}, 12); // channel multiplier 2
  const attr_list attrs = {
      {"groups", std::int32_t{3}}, {"strides", ints{2, 2}}, {"paddings", ints{1, 1}}};
  EXPECT_TRUE(tensor_near(run_conv("depthwise_conv2d", x, f, attrs), naive_conv(x, f,
                                                                                {.stride_h = 2,
                                                                                 .stride_w = 2,
                                                                                 .pad_top = 1,
                                                                                 .pad_bottom = 1,
                                                                                 .pad_left = 1,
                                                                                 .pad_right = 1,
                                                                                 .groups = 3})));
}

TEST(Conv2d, MatchesPaddleOnSameWithGroups) {
  // paddle.nn.functional.conv2d(x, w, stride=2, padding='SAME', groups=2) in Paddle 2.6.2 with
  // x = arange(50).reshape(1, 2, 5, 5) / 10 and w = (arange(18).reshape(2, 1, 3, 3) - 8) / 4.
  std::vector<float> xv(50), wv(18);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i) / 10;
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = (static_cast<float>(i) - 8) / 4;
  const tensor out = run_conv("conv2d", tensor::from_vector(xv, {1, 2, 5, 5}),
                              tensor::from_vector(wv, {2, 1, 3, 3}),
                              {{"strides", ints{2, 2}},
                               {"padding_algorithm", std::string("SAME")},
                               {"groups", std::int32_t{2}}});
  EXPECT_TRUE(
      tensor_near(out, tensor::from_vector<float>(
                           {-0.2f, -1.025f, -1.4f, -3.975f, -8.4f, -7.575f, -8.6f, -15.425f, -12.2f,
                            20.f, 29.425f, 19.f, 30.825f, 44.025f, 27.525f, 17.6f, 24.025f, 14.2f},
                           {1, 2, 3, 3})));
}

TEST(Conv2d, GradMakerAsPaddle) {
  const auto grad =
      pe::op_registry::global().find("conv2d")->make_grad(conv_op("conv2d", {})).at(0);
  EXPECT_EQ(grad.type(), "conv2d_grad");
  EXPECT_EQ(pe::input_args(grad, "Input"), std::vector<std::string>{"x"});
  EXPECT_EQ(pe::input_args(grad, "Filter"), std::vector<std::string>{"f"});
  EXPECT_EQ(pe::input_args(grad, "Output@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grad, "Input@GRAD"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(pe::output_args(grad, "Filter@GRAD"), std::vector<std::string>{"f@GRAD"});
  const auto depthwise = pe::op_registry::global()
                             .find("depthwise_conv2d")
                             ->make_grad(conv_op("depthwise_conv2d", {}));
  EXPECT_EQ(depthwise.at(0).type(), "depthwise_conv2d_grad");
}

TEST(Conv2dGrad, WithoutInputGrad) {
  // The first conv of a network: its grad op binds Filter@GRAD only.
  pe::proto::OpDesc grad =
      make_op("conv2d_grad", {{"Input", "x"}, {"Filter", "f"}, {"Output@GRAD", "dout"}},
              {{"Filter@GRAD", "df"}}, {{"paddings", ints{1, 1}}});
  pe::scope vars;
  vars.var("x") = random_tensor({2, 2, 4, 4}, 31);
  vars.var("f") = random_tensor({3, 2, 3, 3}, 32);
  vars.var("dout") = random_tensor({2, 3, 4, 4}, 33);
  run_op(grad, vars);
  EXPECT_EQ(vars.get("df").shape(), (shape_t{3, 2, 3, 3}));
  EXPECT_EQ(vars.find("x@GRAD"), nullptr);
  // With Input@GRAD bound as well, Filter@GRAD is the same.
  const std::vector<float> filter_only(vars.get("df").values<float>().begin(),
                                       vars.get("df").values<float>().end());
  pe::set_output(grad, "Input@GRAD", {"dx"});
  run_op(grad, vars);
  EXPECT_EQ(vars.get("dx").shape(), (shape_t{2, 2, 4, 4}));
  EXPECT_TRUE(pe::testing::tensor_is(vars.get("df"), {3, 2, 3, 3}, filter_only));
}

// The loss is linear in Input and in Filter, so a large delta is exact and keeps FP32
// rounding out of the central differences.
TEST(Conv2dGrad, MatchesCentralDifferences) {
  const std::vector<std::pair<const char*, attr_list>> cases = {
      {"stride 2, 4 paddings", {{"strides", ints{2, 2}}, {"paddings", ints{1, 0, 1, 2}}}},
      {"dilation 2", {{"dilations", ints{2, 2}}, {"paddings", ints{2, 2}}}},
      {"groups 2", {{"groups", std::int32_t{2}}, {"paddings", ints{1, 1}}}},
      {"SAME", {{"strides", ints{2, 2}}, {"padding_algorithm", std::string("SAME")}}},
  };
  std::uint64_t seed = 41;
  for (const auto& [name, attrs] : cases) {
    SCOPED_TRACE(name);
    const bool grouped = std::string(name) == "groups 2";
    EXPECT_TRUE(gradient_matches(
        {.op_type = "conv2d",
         .inputs = {{"Input", {random_tensor({2, 4, 6, 5}, seed++)}},
                    {"Filter",
                     {random_tensor({3 * (grouped ? 2 : 1), grouped ? 2 : 4, 3, 3}, seed++)}}},
         .attrs = attrs,
         .check_slots = {"Input", "Filter"},
         .loss_outputs = {"Output"},
         .delta = 0.1f}));
  }
  EXPECT_TRUE(gradient_matches({.op_type = "depthwise_conv2d",
                                .inputs = {{"Input", {random_tensor({2, 3, 5, 5}, 51)}},
                                           {"Filter", {random_tensor({3, 1, 3, 3}, 52)}}},
                                .attrs = {{"groups", std::int32_t{3}}, {"paddings", ints{1, 1}}},
                                .check_slots = {"Input", "Filter"},
                                .loss_outputs = {"Output"},
                                .delta = 0.1f}));
}

TEST(Conv2d, InfersShapes) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 4, 28, -1}}},
                              {"f", {pe::dtype::fp32, {6, 2, 5, 5}}},
                              {"out@GRAD", {pe::dtype::fp32, {-1, 6, 14, -1}}}};
  const attr_list attrs = {
      {"groups", std::int32_t{2}}, {"strides", ints{2, 2}}, {"paddings", ints{2, 2}}};
  EXPECT_EQ(infer(conv_op("conv2d", attrs), vars).at("out").dims, (shape_t{-1, 6, 14, -1}));
  const auto grad =
      pe::op_registry::global().find("conv2d")->make_grad(conv_op("conv2d", attrs)).at(0);
  const auto dims = infer(grad, vars);
  EXPECT_EQ(dims.at("x@GRAD").dims, (shape_t{-1, 4, 28, -1}));
  EXPECT_EQ(dims.at("f@GRAD").dims, (shape_t{6, 2, 5, 5}));
  // Paddle's extras at their harmless values are accepted.
  EXPECT_NO_THROW(infer(conv_op("conv2d", {{"use_cudnn", true},
                                           {"use_mkldnn", false},
                                           {"workspace_size_MB", std::int32_t{4096}},
                                           {"exhaustive_search", false},
                                           {"groups", std::int32_t{2}}}),
                        vars));
}

TEST(Conv2d, RejectsWhatItDoesNotImplement) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 4, 8, 8}}},
                              {"f", {pe::dtype::fp32, {6, 4, 3, 3}}},
                              {"b", {pe::dtype::fp32, {6}}}};
  const auto message = [&](const attr_list& attrs) {
    return infer_error(conv_op("conv2d", attrs), vars);
  };
  EXPECT_TRUE(contains(message({{"data_format", std::string("NHWC")}}),
                       "op #0 (conv2d): data_format 'NHWC' is not supported; only NCHW"));
  EXPECT_TRUE(contains(message({{"groups", std::int32_t{2}}}),
                       "Input [-1, 4, 8, 8] has 4 channels, but Filter [6, 4, 3, 3] with groups "
                       "2 takes 8"));
  EXPECT_TRUE(contains(message({{"fuse_relu", true}}), "fuse_relu = true is not supported"));
  EXPECT_TRUE(contains(message({{"fuse_activation", std::string("relu")}}),
                       "fuse_activation 'relu' is not supported"));
  EXPECT_TRUE(contains(message({{"paddings", ints{1, 1, 1}}}),
                       "paddings must have 2 values (height, width) or 4 (top, bottom, left, "
                       "right), got [1, 1, 1]"));
  EXPECT_TRUE(contains(message({{"padding_algorithm", std::string("FULL")}}),
                       "padding_algorithm must be EXPLICIT, SAME or VALID, got 'FULL'"));
  EXPECT_TRUE(contains(message({{"strides", ints{0, 1}}}),
                       "strides must be 2 positive values (height, width), got [0, 1]"));
  EXPECT_TRUE(contains(message({{"dilations", ints{4, 1}}}),
                       "height: the window spans 9 but the padded input has only 8"));
  EXPECT_TRUE(
      contains(infer_error(make_op("conv2d", {{"Input", "x"}, {"Filter", "f"}, {"Bias", "b"}},
                                   {{"Output", "out"}}),
                           vars),
               "the Bias and ResidualData inputs"));
  // The kernel applies the same rule.
  pe::scope scope;
  scope.var("x") = tensor::zeros(pe::dtype::fp32, {1, 4, 8, 8});
  scope.var("f") = tensor::zeros(pe::dtype::fp32, {6, 4, 3, 3});
  EXPECT_TRUE(contains(error_of(conv_op("conv2d", {{"groups", std::int32_t{4}}}), scope),
                       "has 4 channels, but Filter [6, 4, 3, 3] with groups 4 takes 16"));
}

TEST(Conv2d, OneDnnUsesTheBlasThreadCount) {
  // oneDNN runs on OpenMP, whose default team is every core: the kernels set the calling
  // thread's to set_blas_threads' count (1 unless raised) so places do not oversubscribe.
  const tensor x = random_tensor({1, 2, 6, 6}, 61);
  const tensor f = random_tensor({2, 2, 3, 3}, 62);
  run_conv("conv2d", x, f, {});
  EXPECT_EQ(pe::dnnl_threads(), pe::blas_threads());
  pe::set_blas_threads(2);
  run_conv("conv2d", x, f, {});
  EXPECT_EQ(pe::dnnl_threads(), 2);
  pe::set_blas_threads(1);
  EXPECT_TRUE(tensor_near(run_conv("conv2d", x, f, {}), naive_conv(x, f, {})));
  EXPECT_EQ(pe::dnnl_threads(), 1);
}

} // namespace

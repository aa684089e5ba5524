// pool2d: max and avg forward against a naive loop of Paddle's CPU rule over strides,
// paddings (2 and 4 values), SAME / VALID, ceil_mode, exclusive on and off, global and
// adaptive-global pooling; one case against numbers Paddle 2.6 computed; the grad maker,
// shape inference, the errors users see, and gradients against central differences.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
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

/// One axis of the naive reference: kernel, stride, paddings (after SAME / VALID), ceil_mode.
struct axis_case {
  std::int64_t kernel, stride, pad_begin, pad_end;
};

std::int64_t out_extent(std::int64_t in, const axis_case& a, bool ceil_mode) {
  return (in + a.pad_begin + a.pad_end - a.kernel + (ceil_mode ? a.stride - 1 : 0)) / a.stride + 1;
}

/// Paddle's CPU pooling (phi/kernels/funcs/pooling.cc): the window [o * s - pad_begin, + k)
/// is clipped to [-pad_begin, in + pad_begin) for the non-exclusive divisor and to the input
/// for the elements; max ignores padding; exclusive avg divides by the real elements.
tensor naive_pool(const tensor& x, bool max, bool exclusive, const axis_case& ah,
                  const axis_case& aw, bool ceil_mode) {
  const std::int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  const std::int64_t oh = out_extent(h, ah, ceil_mode), ow = out_extent(w, aw, ceil_mode);
  tensor out(pe::dtype::fp32, {x.dim(0), x.dim(1), oh, ow});
  const float* xs = x.data<float>();
  float* os = out.data<float>();
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j) {
        const std::int64_t hs = i * ah.stride - ah.pad_begin;
        const std::int64_t he = std::min(hs + ah.kernel, h + ah.pad_begin);
        const std::int64_t ws = j * aw.stride - aw.pad_begin;
        const std::int64_t we = std::min(ws + aw.kernel, w + aw.pad_begin);
        const auto padded_size = static_cast<double>((he - hs) * (we - ws));
        double acc = max ? -std::numeric_limits<double>::infinity() : 0;
        std::int64_t count = 0;
        for (std::int64_t y = std::max<std::int64_t>(hs, 0); y < std::min(he, h); ++y)
          for (std::int64_t z = std::max<std::int64_t>(ws, 0); z < std::min(we, w); ++z) {
            const double v = xs[(p * h + y) * w + z];
            acc = max ? std::max(acc, v) : acc + v;
            ++count;
          }
        os[(p * oh + i) * ow + j] = static_cast<float>(
            max ? acc : acc / (exclusive ? static_cast<double>(count) : padded_size));
      }
  return out;
}

pe::proto::OpDesc pool_op(const attr_list& attrs) {
  return make_op("pool2d", {{"X", "x"}}, {{"Out", "out"}}, attrs);
}

tensor run_pool(const tensor& x, const attr_list& attrs) {
  pe::scope vars;
  vars.var("x") = x.clone();
  run_op(pool_op(attrs), vars);
  return vars.get("out");
}

::testing::AssertionResult tensor_near(const tensor& got, const tensor& expected) {
  return pe::testing::tensor_is(got, expected);
}

/// X of `dims` holding a shuffled 0, 0.05, 0.1, ...: no ties, so the max is unique and a
/// central difference of 5e-3 never changes which element wins.
tensor distinct_values(const shape_t& dims, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(pe::numel_of(dims)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>(i) - 1.f;
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return tensor::from_vector(v, dims);
}

struct pool_case {
  const char* name;
  shape_t x;
  attr_list attrs; ///< besides pooling_type and exclusive
  axis_case h, w;
  bool ceil_mode = false;
};

const std::vector<pool_case>& pool_cases() {
  static const std::vector<pool_case> cases = {
      {"k2 s2 on odd extents",
       {2, 3, 7, 5},
       {{"ksize", ints{2, 2}}, {"strides", ints{2, 2}}},
       {2, 2, 0, 0},
       {2, 2, 0, 0}},
      {"k2 s2 tiling even extents", // the 2 x 2 fast path of the max grad
       {2, 3, 6, 8},
       {{"ksize", ints{2, 2}}, {"strides", ints{2, 2}}},
       {2, 2, 0, 0},
       {2, 2, 0, 0}},
      {"k3 s2 paddings 1",
       {1, 2, 6, 7},
       {{"ksize", ints{3, 3}}, {"strides", ints{2, 2}}, {"paddings", ints{1, 1}}},
       {3, 2, 1, 1},
       {3, 2, 1, 1}},
      {"4 paddings",
       {1, 2, 6, 6},
       {{"ksize", ints{3, 2}}, {"strides", ints{1, 2}}, {"paddings", ints{2, 0, 0, 1}}},
       {3, 1, 2, 0},
       {2, 2, 0, 1}},
      {"ceil_mode",
       {1, 2, 6, 7},
       {{"ksize", ints{3, 3}},
        {"strides", ints{2, 2}},
        {"paddings", ints{1, 1}},
        {"ceil_mode", true}},
       {3, 2, 1, 1},
       {3, 2, 1, 1},
       true},
      {"ceil_mode without padding",
       {2, 1, 6, 8},
       {{"ksize", ints{3, 3}}, {"strides", ints{2, 2}}, {"ceil_mode", true}},
       {3, 2, 0, 0},
       {3, 2, 0, 0},
       true},
      // SAME: out = ceil(7 / 2) = 4 and ceil(6 / 2) = 3; total padding 2 (1 + 1) and 1 (0 + 1).
      {"SAME",
       {1, 2, 7, 6},
       {{"ksize", ints{3, 3}},
        {"strides", ints{2, 2}},
        {"padding_algorithm", std::string("SAME")},
        {"paddings", ints{4, 4}}},
       {3, 2, 1, 1},
       {3, 2, 0, 1}},
      {"VALID",
       {1, 2, 7, 6},
       {{"ksize", ints{3, 3}},
        {"strides", ints{2, 2}},
        {"padding_algorithm", std::string("VALID")},
        {"paddings", ints{1, 1}}},
       {3, 2, 0, 0},
       {3, 2, 0, 0}},
      {"global",
       {2, 3, 5, 4},
       {{"ksize", ints{2, 2}}, {"global_pooling", true}, {"paddings", ints{1, 1}}},
       {5, 1, 0, 0},
       {4, 1, 0, 0}},
      {"adaptive to 1x1",
       {2, 3, 5, 4},
       {{"ksize", ints{1, 1}}, {"adaptive", true}},
       {5, 1, 0, 0},
       {4, 1, 0, 0}},
  };
  return cases;
}

TEST(Pool2d, MatchesNaiveLoop) {
  std::uint64_t seed = 1;
  for (const auto& c : pool_cases())
    for (const char* type : {"max", "avg"})
      for (const bool exclusive : {true, false}) {
        if (std::string(type) == "max" && !exclusive) continue;
        SCOPED_TRACE(std::string(c.name) + ", " + type + (exclusive ? "" : ", not exclusive"));
        const tensor x = random_tensor(c.x, seed++);
        attr_list attrs = c.attrs;
        attrs.emplace_back("pooling_type", std::string(type));
        attrs.emplace_back("exclusive", exclusive);
        EXPECT_TRUE(tensor_near(run_pool(x, attrs), naive_pool(x, std::string(type) == "max",
                                                               exclusive, c.h, c.w, c.ceil_mode)));
      }
}

TEST(Pool2d, MatchesPaddleOnCeilModeNotExclusive) {
  // paddle.nn.functional.avg_pool2d(ones([1, 1, 6, 6]), 3, 2, padding=1, ceil_mode=True,
  // exclusive=False) in Paddle 2.6.2: the last windows run past the input plus the padding
  // and divide by the part of them inside it.
  const tensor out = run_pool(tensor::from_vector(std::vector<float>(36, 1.f), {1, 1, 6, 6}),
                              {{"pooling_type", std::string("avg")},
                               {"ksize", ints{3, 3}},
                               {"strides", ints{2, 2}},
                               {"paddings", ints{1, 1}},
                               {"ceil_mode", true},
                               {"exclusive", false}});
  const float a = 4.f / 9, b = 6.f / 9, c = 3.f / 9;
  EXPECT_TRUE(tensor_near(
      out, tensor::from_vector<float>(
               {a, b, b, c, b, 1, 1, 0.5f, b, 1, 1, 0.5f, c, 0.5f, 0.5f, 0.25f}, {1, 1, 4, 4})));
}

TEST(Pool2dGrad, MatchesCentralDifferences) {
  std::uint64_t seed = 100;
  for (const auto& c : pool_cases())
    for (const char* type : {"max", "avg"})
      for (const bool exclusive : {true, false}) {
        if (std::string(type) == "max" && !exclusive) continue;
        SCOPED_TRACE(std::string(c.name) + ", " + type + (exclusive ? "" : ", not exclusive"));
        attr_list attrs = c.attrs;
        attrs.emplace_back("pooling_type", std::string(type));
        attrs.emplace_back("exclusive", exclusive);
        EXPECT_TRUE(gradient_matches({.op_type = "pool2d",
                                      .inputs = {{"X", {distinct_values(c.x, seed++)}}},
                                      .attrs = attrs,
                                      .check_slots = {"X"}}));
      }
}

/// X@GRAD of a 2 x 2 max pool at stride 2 over x (rows of [1, 1, 2, width]), Out and Out@GRAD.
tensor max_pool_2x2_grad(tensor x, tensor out, tensor dout) {
  pe::scope vars;
  vars.var("x") = std::move(x);
  vars.var("out") = std::move(out);
  vars.var("dout") = std::move(dout);
  run_op(make_op("pool2d_grad", {{"X", "x"}, {"Out", "out"}, {"Out@GRAD", "dout"}},
                 {{"X@GRAD", "dx"}},
                 {{"pooling_type", std::string("max")},
                  {"ksize", ints{2, 2}},
                  {"strides", ints{2, 2}}}),
         vars);
  return vars.get("dx");
}

TEST(Pool2dGrad, MaxGoesToTheFirstMaximumAsPaddle) {
  // Paddle's max-pool grad gives each window's gradient to its first element (row-major)
  // equal to the maximum; ties are common after a relu.
  const tensor dx = max_pool_2x2_grad(tensor::from_vector<float>({0, 0, 2, 1, 0, 0, 2, 2}, {1, 1, 2, 4}),
                                      tensor::from_vector<float>({0, 2}, {1, 1, 1, 2}),
                                      tensor::from_vector<float>({3, 5}, {1, 1, 1, 2}));
  EXPECT_TRUE(pe::testing::tensor_is(dx, {1, 1, 2, 4}, {3, 0, 5, 0, 0, 0, 0, 0}));
}

TEST(Pool2dGrad, MaxGoesToTheFirstMaximumInEveryPositionOfA2x2Window) {
  // Windows that tile the input (the kernel's 2 x 2 path): the first maximum is the top
  // left, top right, bottom left and bottom right one in turn, with ties after it.
  const tensor dx = max_pool_2x2_grad(tensor::from_vector<float>({4, 4, 1, 3, 0, 0, 0, 0,  //
                                                                  4, 4, 3, 3, 5, 5, 0, 7},
                                                                 {1, 1, 2, 8}),
                                      tensor::from_vector<float>({4, 3, 5, 7}, {1, 1, 1, 4}),
                                      tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 1, 4}));
  EXPECT_TRUE(pe::testing::tensor_is(dx, {1, 1, 2, 8},
                                     {1, 0, 0, 2, 0, 0, 0, 0,  //
                                      0, 0, 0, 0, 3, 0, 0, 4}));
}

TEST(Pool2d, GradMakerAsPaddle) {
  const auto op = pool_op(
      {{"pooling_type", std::string("max")}, {"ksize", ints{2, 2}}, {"strides", ints{2, 2}}});
  const auto grad = pe::op_registry::global().find("pool2d")->make_grad(op).at(0);
  EXPECT_EQ(grad.type(), "pool2d_grad");
  EXPECT_EQ(pe::input_args(grad, "X"), std::vector<std::string>{"x"});
  EXPECT_EQ(pe::input_args(grad, "Out"), std::vector<std::string>{"out"});
  EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grad, "X@GRAD"), std::vector<std::string>{"x@GRAD"});
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 6, 28, 28}}},
                              {"out", {pe::dtype::fp32, {-1, 6, 14, 14}}},
                              {"out@GRAD", {pe::dtype::fp32, {-1, 6, 14, 14}}}};
  EXPECT_EQ(infer(grad, vars).at("x@GRAD").dims, (shape_t{-1, 6, 28, 28}));
}

TEST(Pool2d, InfersShapes) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 6, 28, 27}}},
                              {"u", {pe::dtype::fp32, {-1, 6, -1, -1}}}};
  const auto out = [&](const attr_list& attrs, const char* x = "x") {
    attr_list all = attrs;
    all.emplace_back("pooling_type", std::string("max"));
    return infer(make_op("pool2d", {{"X", x}}, {{"Out", "out"}}, all), vars).at("out").dims;
  };
  EXPECT_EQ(out({{"ksize", ints{2, 2}}, {"strides", ints{2, 2}}}), (shape_t{-1, 6, 14, 13}));
  EXPECT_EQ(out({{"ksize", ints{2, 2}}, {"strides", ints{2, 2}}, {"ceil_mode", true}}),
            (shape_t{-1, 6, 14, 14}));
  EXPECT_EQ(out({{"ksize", ints{3, 3}},
                 {"strides", ints{2, 2}},
                 {"padding_algorithm", std::string("SAME")}}),
            (shape_t{-1, 6, 14, 14}));
  EXPECT_EQ(out({{"ksize", ints{3, 3}}, {"global_pooling", true}}), (shape_t{-1, 6, 1, 1}));
  EXPECT_EQ(out({{"ksize", ints{1, 1}}, {"adaptive", true}}, "u"), (shape_t{-1, 6, 1, 1}));
  EXPECT_EQ(out({{"ksize", ints{2, 2}}}, "u"), (shape_t{-1, 6, -1, -1}));
  // Paddle's extras at their harmless values are accepted.
  EXPECT_EQ(out({{"ksize", ints{2, 2}},
                 {"use_cudnn", true},
                 {"use_mkldnn", false},
                 {"is_test", false},
                 {"strides", ints{2, 2}}}),
            (shape_t{-1, 6, 14, 13}));
}

TEST(Pool2d, RejectsWhatItDoesNotImplement) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 6, 8, 8}}},
                              {"v", {pe::dtype::fp32, {-1, 8}}}};
  const auto message = [&](const attr_list& attrs, const char* x = "x") {
    try {
      infer(make_op("pool2d", {{"X", x}}, {{"Out", "out"}}, attrs), vars);
    } catch (const pe::error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const attr_list max = {{"pooling_type", std::string("max")}};
  const auto with = [&](attr_list attrs) {
    attrs.insert(attrs.begin(), max.begin(), max.end());
    return attrs;
  };
  EXPECT_TRUE(contains(message(with({{"ksize", ints{2, 2}}, {"adaptive", true}})),
                       "op #0 (pool2d): adaptive pooling to an output of [2, 2] is not "
                       "supported; only the global case (output [1, 1]) is implemented"));
  EXPECT_TRUE(contains(message(with({{"ksize", ints{2, 2}}, {"data_format", std::string("NHWC")}})),
                       "data_format 'NHWC' is not supported; only NCHW is implemented"));
  EXPECT_TRUE(contains(message({{"pooling_type", std::string("lp")}, {"ksize", ints{2, 2}}}),
                       "pooling_type must be 'max' or 'avg', got 'lp'"));
  EXPECT_TRUE(contains(message(with({{"ksize", ints{2}}})),
                       "ksize must be 2 positive values (height, width), got [2]"));
  EXPECT_TRUE(contains(message(with({{"ksize", ints{9, 2}}})),
                       "height: the window spans 9 but the padded input has only 8"));
  // Windows over padding alone: Paddle would write -FLT_MAX or NaN there.
  EXPECT_TRUE(contains(message(with({{"ksize", ints{2, 2}}, {"paddings", ints{2, 2}}})),
                       "height: the first window holds only padding (input 8, kernel 2, stride 1, "
                       "paddings 2 + 2); use paddings below the kernel"));
  EXPECT_TRUE(contains(message(with({{"ksize", ints{3, 2}}, {"paddings", ints{0, 0, 2, 0}}})),
                       "width: the first window holds only padding"));
  EXPECT_TRUE(contains(message({{"pooling_type", std::string("avg")},
                                {"ksize", ints{2, 2}},
                                {"strides", ints{3, 3}},
                                {"paddings", ints{1, 1}},
                                {"ceil_mode", true}}),
                       "height: the last window holds only padding (input 8, kernel 2, stride 3, "
                       "paddings 1 + 1, ceil_mode); use paddings below the kernel or ceil_mode = false"));
  EXPECT_EQ(message(with({{"ksize", ints{2, 2}}, {"strides", ints{3, 3}}, {"paddings", ints{1, 1}}})), "")
      << "without ceil_mode the last window [5, 7) holds input";
  EXPECT_EQ(message(with({{"ksize", ints{3, 3}}, {"paddings", ints{2, 2}}})), "");
  EXPECT_TRUE(
      contains(message(with({{"ksize", ints{2, 2}}}), "v"), "X must be [N, C, H, W], got [-1, 8]"));
  EXPECT_TRUE(
      contains(message({{"ksize", ints{2, 2}}}), "missing required attribute 'pooling_type'"));
}

} // namespace

// fill_constant, uniform_random, gaussian_random: values, dtypes, seeding and shape inference;
// and the schemas of the startup/driver host ops feed and fetch.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "graph/exec/bound_op.hpp"
#include "graph/exec/scope.hpp"
#include "graph/attributes.hpp"
#include "graph/op_registry.hpp"

namespace {

using pe::tensor;
using attr_list = std::vector<std::pair<std::string, pe::attribute>>;

pe::proto::OpDesc make_op(const std::string& type, const attr_list& attrs) {
  pe::proto::OpDesc op;
  op.set_type(type);
  pe::set_output(op, "Out", {"out"});
  for (const auto& [name, value] : attrs) pe::set_attr(op, name, value);
  return op;
}

/// Runs the initializer `op` in a fresh scope and returns its Out.
tensor run(const pe::proto::OpDesc& op) {
  pe::scope vars;
  pe::bound_op(op, vars, pe::place::cpu(), 0).run();
  return vars.get("out");
}

/// The message of the pe::error running `op` throws ("" when it succeeds).
std::string error_of(const pe::proto::OpDesc& op) {
  try {
    run(op);
  } catch (const pe::error& e) {
    return e.what();
  }
  return "";
}

/// The output shape inference gives `op`.
pe::var_info infer(const pe::proto::OpDesc& op) {
  const pe::op_schema* schema = pe::op_registry::global().find(op.type());
  EXPECT_NE(schema, nullptr) << op.type();
  pe::attribute_map attrs = pe::resolve_attributes(op, *schema);
  pe::var_table none;
  pe::shape_context ctx(op, attrs, none, 0);
  schema->infer_shape(ctx);
  EXPECT_EQ(ctx.inferred().size(), 1u);
  return ctx.inferred().at(0).second;
}

constexpr auto int64 = static_cast<std::int32_t>(pe::dtype::int64);
constexpr auto int32 = static_cast<std::int32_t>(pe::dtype::int32);

TEST(FillConstant, FillsFp32ByDefault) {
  tensor t = run(make_op("fill_constant", {{"shape", std::vector<std::int64_t>{2, 3}},
                                           {"value", 2.5f}}));
  EXPECT_EQ(t.type(), pe::dtype::fp32);
  EXPECT_EQ(t.shape(), (pe::shape_t{2, 3}));
  for (float v : t.values<float>()) EXPECT_EQ(v, 2.5f);
}

TEST(FillConstant, FillsIntegerDtypes) {
  tensor i32 = run(make_op("fill_constant", {{"shape", std::vector<std::int64_t>{4}},
                                             {"value", 7.f},
                                             {"dtype", int32}}));
  ASSERT_EQ(i32.type(), pe::dtype::int32);
  for (auto v : i32.values<std::int32_t>()) EXPECT_EQ(v, 7);

  // 2^53 + 1 has no float or double representation: str_value must carry it exactly.
  tensor i64 = run(make_op("fill_constant", {{"shape", std::vector<std::int64_t>{1}},
                                             {"value", 1.f},
                                             {"dtype", int64},
                                             {"str_value", std::string("9007199254740993")}}));
  ASSERT_EQ(i64.type(), pe::dtype::int64);
  EXPECT_EQ(i64.values<std::int64_t>()[0], 9007199254740993);
}

TEST(FillConstant, StrValueOverridesValue) {
  tensor t = run(make_op("fill_constant", {{"shape", std::vector<std::int64_t>{1}},
                                           {"value", 1.f},
                                           {"str_value", std::string("-inf")}}));
  EXPECT_EQ(t.values<float>()[0], -INFINITY);
  t = run(make_op("fill_constant", {{"shape", std::vector<std::int64_t>{1}},
                                    {"str_value", std::string("0.125")}}));
  EXPECT_EQ(t.values<float>()[0], 0.125f);
}

TEST(FillConstant, AcceptsPaddle1IntShapes) {
  // Paddle 1.x stored shape as INTS.
  tensor t = run(make_op("fill_constant", {{"shape", std::vector<std::int32_t>{3}}}));
  EXPECT_EQ(t.shape(), (pe::shape_t{3}));
}

TEST(FillConstant, RejectsBadDtypeAndStrValue) {
  std::string message = error_of(make_op(
      "fill_constant", {{"shape", std::vector<std::int64_t>{1}},
                        {"dtype", static_cast<std::int32_t>(pe::dtype::fp64)}}));
  EXPECT_NE(message.find("dtype FP64 is not supported"), std::string::npos) << message;

  message = error_of(make_op("fill_constant", {{"shape", std::vector<std::int64_t>{1}},
                                               {"dtype", int64},
                                               {"str_value", std::string("12abc")}}));
  EXPECT_NE(message.find("str_value '12abc' is not a valid INT64 value"), std::string::npos)
      << message;
}

TEST(FillConstant, InfersShapeAndDtype) {
  pe::var_info out = infer(make_op("fill_constant", {{"shape", std::vector<std::int64_t>{5, 1}},
                                                     {"dtype", int64}}));
  EXPECT_EQ(out.dims, (pe::shape_t{5, 1}));
  EXPECT_EQ(out.type, pe::dtype::int64);
  EXPECT_THROW(infer(make_op("fill_constant", {{"shape", std::vector<std::int64_t>{-1, 2}}})),
               pe::error);
  EXPECT_THROW(infer(make_op("fill_constant", {{"dtype", std::int32_t{6}}})), pe::error);
}

pe::proto::OpDesc uniform_op(std::int32_t seed, float lo, float hi, std::int64_t n) {
  return make_op("uniform_random", {{"shape", std::vector<std::int64_t>{n}},
                                    {"min", lo},
                                    {"max", hi},
                                    {"seed", seed}});
}

pe::proto::OpDesc gaussian_op(std::int32_t seed, float mean, float stddev, std::int64_t n) {
  return make_op("gaussian_random", {{"shape", std::vector<std::int64_t>{n}},
                                     {"mean", mean},
                                     {"std", stddev},
                                     {"seed", seed}});
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

/// Sample mean and standard deviation, in double.
std::pair<double, double> moments(const tensor& t) {
  double sum = 0, sum_sq = 0;
  for (float v : t.values<float>()) {
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(t.numel());
  const double mean = sum / n;
  return {mean, std::sqrt(sum_sq / n - mean * mean)};
}

TEST(UniformRandom, IsReproducibleForASeed) {
  EXPECT_TRUE(same_bits(run(uniform_op(42, -1, 1, 1000)), run(uniform_op(42, -1, 1, 1000))));
  EXPECT_FALSE(same_bits(run(uniform_op(42, -1, 1, 1000)), run(uniform_op(43, -1, 1, 1000))));
  // seed 0: a fresh nondeterministic seed every run.
  EXPECT_FALSE(same_bits(run(uniform_op(0, -1, 1, 1000)), run(uniform_op(0, -1, 1, 1000))));
}

TEST(UniformRandom, FollowsItsSpecifiedBitExactConstruction) {
  // The documented construction: mt19937_64 seeded with `seed`, top 53 bits as a double
  // u in [0, 1), min + (max - min) * u rounded to float. Pins the values across platforms.
  std::mt19937_64 g(7);
  tensor t = run(uniform_op(7, -3, 5, 4));
  for (float v : t.values<float>())
    EXPECT_EQ(v, static_cast<float>(-3.0 + 8.0 * (static_cast<double>(g() >> 11) * 0x1.0p-53)));
}

TEST(UniformRandom, CoversItsRangeUniformly) {
  tensor t = run(uniform_op(5, 2, 5, 100000));
  EXPECT_EQ(t.type(), pe::dtype::fp32);
  for (float v : t.values<float>()) {
    ASSERT_GE(v, 2.f);
    ASSERT_LE(v, 5.f);
  }
  auto [mean, stddev] = moments(t);
  EXPECT_NEAR(mean, 3.5, 0.02);                // standard error ~0.003
  EXPECT_NEAR(stddev, 3 / std::sqrt(12.0), 0.01); // 0.866
}

TEST(GaussianRandom, IsReproducibleForASeed) {
  // An odd count exercises the unpaired last Box-Muller sample.
  EXPECT_TRUE(same_bits(run(gaussian_op(9, 0, 1, 1001)), run(gaussian_op(9, 0, 1, 1001))));
  EXPECT_FALSE(same_bits(run(gaussian_op(9, 0, 1, 1001)), run(gaussian_op(10, 0, 1, 1001))));
  EXPECT_FALSE(same_bits(run(gaussian_op(0, 0, 1, 1001)), run(gaussian_op(0, 0, 1, 1001))));
}

TEST(GaussianRandom, HasRequestedMeanAndStd) {
  tensor t = run(gaussian_op(11, 1, 2, 100001));
  auto [mean, stddev] = moments(t);
  EXPECT_NEAR(mean, 1.0, 0.03); // standard error ~0.006
  EXPECT_NEAR(stddev, 2.0, 0.03);
  std::size_t within_one_sigma = 0;
  for (float v : t.values<float>()) within_one_sigma += std::abs(v - 1.f) < 2.f;
  EXPECT_NEAR(static_cast<double>(within_one_sigma) / t.numel(), 0.6827, 0.01);
}

TEST(RandomOps, InferShapesAndRejectOtherDtypes) {
  pe::var_info out = infer(uniform_op(1, -1, 1, 6));
  EXPECT_EQ(out.dims, (pe::shape_t{6}));
  EXPECT_EQ(out.type, pe::dtype::fp32);
  EXPECT_EQ(infer(gaussian_op(1, 0, 1, 3)).dims, (pe::shape_t{3}));

  auto fp64_uniform = uniform_op(1, -1, 1, 6);
  pe::set_attr(fp64_uniform, "dtype", static_cast<std::int32_t>(pe::dtype::fp64));
  EXPECT_THROW(infer(fp64_uniform), pe::error);
  std::string message = error_of(fp64_uniform);
  EXPECT_NE(message.find("dtype FP64 is not supported"), std::string::npos) << message;
  EXPECT_THROW(infer(uniform_op(1, 1, -1, 6)), pe::error);
}

TEST(IoOps, FeedAndFetchAreHostOps) {
  for (const char* type : {"feed", "fetch"}) {
    const pe::op_schema* schema = pe::op_registry::global().find(type);
    ASSERT_NE(schema, nullptr) << type;
    EXPECT_TRUE(schema->host_op) << type;
    EXPECT_NE(schema->find_input("X"), nullptr);
    EXPECT_NE(schema->find_output("Out"), nullptr);
    ASSERT_NE(schema->find_attr("col"), nullptr);
    EXPECT_EQ(std::get<std::int32_t>(schema->find_attr("col")->value), 0);
  }
}

} // namespace

// fill_constant, uniform_random, gaussian_random: values, dtypes, seeding and shape inference;
// fill_any_like: X's dims, its dtype or the attribute's, Paddle's conversion of the value, no
// gradient, in programs on both executors; and the schemas of the startup/driver host ops
// feed and fetch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "graph/attributes.hpp"
#include "graph/backward.hpp"
#include "graph/builder.hpp"
#include "graph/exec/bound_op.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/exec/scope.hpp"
#include "graph/op_registry.hpp"
#include "graph/validate.hpp"

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

/// Runs the initializer `op` in a fresh scope holding `inputs` (by variable name) and returns
/// its Out.
tensor run(const pe::proto::OpDesc& op, const std::map<std::string, tensor>& inputs = {}) {
  pe::scope vars;
  for (const auto& [name, t] : inputs) vars.var(name) = t.clone();
  pe::bound_op(op, vars, pe::place::cpu(), 0).run();
  return vars.get("out");
}

/// The message of the pe::error running `op` throws ("" when it succeeds).
std::string error_of(const pe::proto::OpDesc& op,
                     const std::map<std::string, tensor>& inputs = {}) {
  try {
    run(op, inputs);
  } catch (const pe::error& e) {
    return e.what();
  }
  return "";
}

/// The output shape inference gives `op` over the declared `vars`.
pe::var_info infer(const pe::proto::OpDesc& op, const pe::var_table& vars = {}) {
  const pe::op_schema* schema = pe::op_registry::global().find(op.type());
  EXPECT_NE(schema, nullptr) << op.type();
  pe::attribute_map attrs = pe::resolve_attributes(op, *schema);
  pe::shape_context ctx(op, attrs, vars, 0);
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

// --- fill_any_like ---------------------------------------------------------------------

constexpr auto fp32 = static_cast<std::int32_t>(pe::dtype::fp32);
constexpr auto uint8 = static_cast<std::int32_t>(pe::dtype::uint8);
constexpr auto boolean = static_cast<std::int32_t>(pe::dtype::boolean);
constexpr auto fp64 = static_cast<std::int32_t>(pe::dtype::fp64);

/// fill_any_like of X = "x" into Out = "out".
pe::proto::OpDesc fill_like_op(float value, std::int32_t type) {
  pe::proto::OpDesc op = make_op("fill_any_like", {{"value", value}, {"dtype", type}});
  pe::set_input(op, "X", {"x"});
  return op;
}

/// fill_any_like's Out over X = `x`.
tensor fill_like(const tensor& x, float value, std::int32_t type = -1) {
  return run(fill_like_op(value, type), {{"x", x}});
}

/// Whether every element of `t` (of element type T) is `v`.
template <class T>
bool all_are(const tensor& t, T v) {
  const auto values = t.values<T>();
  return std::all_of(values.begin(), values.end(), [&](T e) { return e == v; });
}

/// X of each dtype, holding values fill_any_like must not read.
tensor fp32_x() { return tensor::from_vector<float>({0.5f, -3.f, 7.f, 2.f, 9.f, -1.f}, {2, 3}); }
tensor int64_x() { return tensor::from_vector<std::int64_t>({4, -8, 15, 16}, {4, 1}); }

TEST(FillAnyLike, TakesXsDimsAndDtypeByDefault) {
  tensor t = fill_like(fp32_x(), 2.5f);
  ASSERT_EQ(t.type(), pe::dtype::fp32);
  EXPECT_EQ(t.shape(), (pe::shape_t{2, 3}));
  EXPECT_TRUE(all_are(t, 2.5f));

  t = fill_like(int64_x(), 7.f);
  ASSERT_EQ(t.type(), pe::dtype::int64);
  EXPECT_EQ(t.shape(), (pe::shape_t{4, 1}));
  EXPECT_TRUE(all_are<std::int64_t>(t, 7));

  // The schema's defaults: value 0, dtype -1.
  pe::proto::OpDesc bare;
  bare.set_type("fill_any_like");
  pe::set_input(bare, "X", {"x"});
  pe::set_output(bare, "Out", {"out"});
  t = run(bare, {{"x", int64_x()}});
  ASSERT_EQ(t.type(), pe::dtype::int64);
  EXPECT_TRUE(all_are<std::int64_t>(t, 0));

  // Rank 0 and empty X keep their dims.
  EXPECT_EQ(fill_like(tensor::zeros(pe::dtype::fp32, {}), 1.f).shape(), pe::shape_t{});
  EXPECT_EQ(fill_like(tensor::zeros(pe::dtype::int64, {0, 3}), 1.f).shape(), (pe::shape_t{0, 3}));
}

TEST(FillAnyLike, ExplicitDtypeConvertsTheValueAsPaddle) {
  // dtype -1 keeps X's FP32 and 1.5; INT64 truncates as Paddle's static_cast does.
  EXPECT_TRUE(all_are(fill_like(fp32_x(), 1.5f, -1), 1.5f));
  tensor t = fill_like(fp32_x(), 1.5f, int64);
  ASSERT_EQ(t.type(), pe::dtype::int64);
  EXPECT_EQ(t.shape(), (pe::shape_t{2, 3}));
  EXPECT_TRUE(all_are<std::int64_t>(t, 1));
  EXPECT_TRUE(all_are<std::int64_t>(fill_like(fp32_x(), -1.5f, int64), -1));

  t = fill_like(int64_x(), 0.25f, fp32);
  ASSERT_EQ(t.type(), pe::dtype::fp32);
  EXPECT_EQ(t.shape(), (pe::shape_t{4, 1}));
  EXPECT_TRUE(all_are(t, 0.25f));

  t = fill_like(int64_x(), -7.9f, int32);
  ASSERT_EQ(t.type(), pe::dtype::int32);
  EXPECT_TRUE(all_are<std::int32_t>(t, -7));
  t = fill_like(fp32_x(), 255.f, uint8);
  ASSERT_EQ(t.type(), pe::dtype::uint8);
  EXPECT_TRUE(all_are<std::uint8_t>(t, 255));
  t = fill_like(fp32_x(), 0.5f, boolean);
  ASSERT_EQ(t.type(), pe::dtype::boolean);
  EXPECT_TRUE(all_are(t, true));
  EXPECT_TRUE(all_are(fill_like(fp32_x(), 0.f, boolean), false));

  // Any negative dtype means X's, as in Paddle.
  EXPECT_EQ(fill_like(int64_x(), 3.f, -2).type(), pe::dtype::int64);
}

TEST(FillAnyLike, DoesNotChangeXAndMayWriteIt) {
  const tensor x = fp32_x();
  pe::scope vars;
  vars.var("x") = x.clone();
  pe::bound_op(fill_like_op(4.f, int64), vars, pe::place::cpu(), 0).run();
  EXPECT_EQ(std::vector<float>(vars.get("x").values<float>().begin(), vars.get("x").values<float>().end()),
            std::vector<float>(x.values<float>().begin(), x.values<float>().end()));

  // In place (Out = X), the dtype changing.
  pe::proto::OpDesc in_place = fill_like_op(4.f, int64);
  in_place.mutable_outputs(0)->set_arguments(0, "x");
  pe::bound_op(in_place, vars, pe::place::cpu(), 0).run();
  ASSERT_EQ(vars.get("x").type(), pe::dtype::int64);
  EXPECT_EQ(vars.get("x").shape(), (pe::shape_t{2, 3}));
  EXPECT_TRUE(all_are<std::int64_t>(vars.get("x"), 4));
}

TEST(FillAnyLike, RefusesBadDtypesAndValuesNamingTheOp) {
  const std::vector<std::pair<pe::proto::OpDesc, std::string>> cases = {
      {fill_like_op(1.f, fp64), "dtype FP64 is not supported (FP32, INT64, INT32, UINT8 or BOOL)"},
      {fill_like_op(1.f, 99), "dtype dtype(99) is not supported"},
      {fill_like_op(1e10f, int32), "value 10000000000.000000 is not representable as INT32"},
      {fill_like_op(9.3e18f, int64), "is not representable as INT64"},
      {fill_like_op(0x1p63f, int64), "is not representable as INT64"}, // INT64's max rounds to it
      {fill_like_op(256.f, uint8), "value 256.000000 is not representable as UINT8"},
      {fill_like_op(-1.f, uint8), "value -1.000000 is not representable as UINT8"},
      {fill_like_op(1.5f, boolean), "value 1.500000 is not representable as BOOL"},
      {fill_like_op(NAN, int64), "is not representable as INT64"},
      {fill_like_op(INFINITY, int32), "value inf is not representable as INT32"}};
  for (const auto& [op, expected] : cases) {
    SCOPED_TRACE(expected);
    // The kernel: "op #0 (fill_any_like) on cpu:0: fill_any_like: ...".
    const std::string message = error_of(op, {{"x", fp32_x()}});
    EXPECT_NE(message.find("fill_any_like: "), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    // Shape inference: "op #0 (fill_any_like): ...".
    try {
      infer(op, {{"x", {pe::dtype::fp32, {-1, 3}}}});
      ADD_FAILURE() << "shape inference accepted it";
    } catch (const pe::error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("op #0 (fill_any_like): "), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  }
  // FP32 holds NaN and the infinities.
  EXPECT_TRUE(all_are(fill_like(int64_x(), INFINITY, fp32), INFINITY));
  EXPECT_TRUE(std::isnan(fill_like(int64_x(), NAN, fp32).values<float>()[0]));
}

TEST(FillAnyLike, InfersXsDimsWithTheBatchDim) {
  const pe::var_table vars = {{"x", {pe::dtype::fp32, {-1, 4}}}};
  pe::var_info out = infer(fill_like_op(1.f, -1), vars);
  EXPECT_EQ(out.dims, (pe::shape_t{-1, 4}));
  EXPECT_EQ(out.type, pe::dtype::fp32);
  out = infer(fill_like_op(1.f, int64), vars);
  EXPECT_EQ(out.dims, (pe::shape_t{-1, 4}));
  EXPECT_EQ(out.type, pe::dtype::int64);
  out = infer(fill_like_op(0.f, boolean), {{"x", {pe::dtype::int64, {-1, 1, 3}}}});
  EXPECT_EQ(out.dims, (pe::shape_t{-1, 1, 3}));
  EXPECT_EQ(out.type, pe::dtype::boolean);
}

/// ids (INT64 [-1, 3]) and x (FP32 [-1, 3]) fed; ones = ones_like(ids), halves = full_like(ids,
/// 0.5, FP32) and y = x * halves, as Paddle's position ids and masks use them.
struct fill_like_program {
  pe::proto::ProgramDesc main, startup;

  fill_like_program() {
    pe::program_builder b(main, startup, 1);
    const std::string ids = b.data("ids", {-1, 3}, pe::dtype::int64);
    const std::string x = b.data("x", {-1, 3}, pe::dtype::fp32);
    b.append_op("fill_any_like", {{"X", {ids}}}, {{"Out", {"ones"}}},
                {{"value", 1.f}, {"dtype", std::int32_t{-1}}});
    b.append_op("fill_any_like", {{"X", {ids}}}, {{"Out", {"halves"}}},
                {{"value", 0.5f}, {"dtype", fp32}});
    b.append_op("elementwise_mul", {{"X", {x}}, {"Y", {"halves"}}}, {{"Out", {"y"}}}, {});
  }
};

pe::feed_map fill_like_feeds() {
  return {{"ids", tensor::from_vector<std::int64_t>({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, {4, 3})},
          {"x", tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3})}};
}

/// The fetched ones, halves and y of fill_like_program over fill_like_feeds.
void expect_fill_like_results(const std::vector<tensor>& out) {
  ASSERT_EQ(out.size(), 3u);
  ASSERT_EQ(out[0].type(), pe::dtype::int64);
  EXPECT_EQ(out[0].shape(), (pe::shape_t{4, 3}));
  EXPECT_TRUE(all_are<std::int64_t>(out[0], 1));
  ASSERT_EQ(out[1].type(), pe::dtype::fp32);
  EXPECT_EQ(out[1].shape(), (pe::shape_t{4, 3}));
  EXPECT_TRUE(all_are(out[1], 0.5f));
  ASSERT_EQ(out[2].shape(), (pe::shape_t{4, 3}));
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(out[2].values<float>()[i], 0.5f * (i + 1)) << i;
}

TEST(FillAnyLike, RunsInAProgramOnBothExecutors) {
  fill_like_program p;
  const pe::var_table vars = pe::validate_program(p.main);
  EXPECT_EQ(vars.at("ones").type, pe::dtype::int64);
  EXPECT_EQ(vars.at("ones").dims, (pe::shape_t{-1, 3}));
  EXPECT_EQ(vars.at("halves").type, pe::dtype::fp32);

  pe::scope scope;
  pe::reference_executor reference(p.main, scope);
  expect_fill_like_results(reference.run(fill_like_feeds(), {"ones", "halves", "y"}));

  // Two places, two rows each; the fetches are concatenated along dim 0.
  pe::parallel_executor actors({pe::place::cpu(0), pe::place::cpu(1)}, p.startup, p.main);
  expect_fill_like_results(actors.run(fill_like_feeds(), {"ones", "halves", "y"}));
}

TEST(FillAnyLike, HasNoGradient) {
  EXPECT_FALSE(pe::op_registry::global().find("fill_any_like")->make_grad);
  // loss = mean(w * full_like(w, 2)): the backward pass stops at fill_any_like, so w@GRAD
  // comes from elementwise_mul's grad alone and no fill_any_like grad op is emitted.
  pe::proto::ProgramDesc main, startup;
  pe::program_builder b(main, startup, 1);
  const std::string w = b.parameter("w", {3}, pe::program_builder::init::one);
  b.append_op("fill_any_like", {{"X", {w}}}, {{"Out", {"twos"}}}, {{"value", 2.f}});
  b.append_op("elementwise_mul", {{"X", {w}}, {"Y", {"twos"}}}, {{"Out", {"prod"}}}, {});
  const auto grads = pe::append_backward(main, b.mean("prod"));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].first, w);
  std::vector<std::string> types;
  for (const auto& op : main.blocks(0).ops()) types.push_back(op.type());
  EXPECT_EQ(std::count(types.begin(), types.end(), "fill_any_like"), 1) << ::testing::PrintToString(types);
  EXPECT_EQ(std::count(types.begin(), types.end(), "elementwise_mul_grad"), 1);
  for (const auto& t : types) EXPECT_EQ(t.find("fill_any_like_grad"), std::string::npos);
  pe::validate_program(main);

  // d mean(w * 2) / dw = 2 / 3 per element.
  pe::scope vars;
  pe::reference_executor(startup, vars).run({}, {});
  const auto out = pe::reference_executor(main, vars).run({}, {pe::grad_name(w)});
  ASSERT_EQ(out.size(), 1u);
  for (float g : out[0].values<float>()) EXPECT_FLOAT_EQ(g, 2.f / 3.f);
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

// Hostile programs (issue 13): sizes from a file that would overflow int64, dims that are
// negative or too large, fill values the output dtype cannot hold. Each is refused with an
// error naming the op and variable, never reaching undefined behaviour (run under UBSan).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/checked_math.hpp"
#include "core/tensor.hpp"
#include "graph/attributes.hpp"
#include "graph/builder.hpp"
#include "graph/models/mlp.hpp"
#include "graph/ssa_graph.hpp"
#include "graph/validate.hpp"
#include "kernels/math_shapes.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/tiny_mlp.hpp"

namespace pe {
namespace {

using testing::expect_error;
using testing::tiny_mlp;

constexpr std::int64_t two_to(int n) { return std::int64_t{1} << n; }

proto::VarDesc& var_of(proto::ProgramDesc& p, const std::string& name) {
  for (auto& v : *p.mutable_blocks(0)->mutable_vars())
    if (v.name() == name) return v;
  throw std::runtime_error("no var " + name);
}

void set_dims(proto::ProgramDesc& p, const std::string& name, const shape_t& dims) {
  auto* tensor = var_of(p, name).mutable_type()->mutable_lod_tensor()->mutable_tensor();
  tensor->clear_dims();
  for (auto d : dims) tensor->add_dims(d);
}

/// A main program with data x [2, 3, 4] and y [12, 5] and `out` = mul(x, y).
struct mul_program {
  proto::ProgramDesc main, startup;
  proto::OpDesc* mul = nullptr;

  mul_program() {
    program_builder b(main, startup, 1);
    b.data("x", {2, 3, 4}, dtype::fp32);
    b.data("y", {12, 5}, dtype::fp32);
    mul = &b.append_op("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}}, {});
  }
};

/// A main program with `c` = fill_constant(shape [2], dtype, value 1).
struct fill_program {
  proto::ProgramDesc main, startup;
  proto::OpDesc* fill = nullptr;

  explicit fill_program(dtype type) {
    program_builder b(main, startup, 1);
    fill = &b.append_op("fill_constant", {}, {{"Out", {"c"}}},
                        {{"shape", std::vector<std::int64_t>{2}},
                         {"dtype", static_cast<std::int32_t>(type)},
                         {"value", 1.f}});
  }
};

/// The (Param, Grad) pairs of a program's sgd ops, in program order.
std::vector<std::pair<std::string, std::string>> sgd_params(const proto::ProgramDesc& p) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& op : p.blocks(0).ops()) {
    if (op.type() != "sgd") continue;
    std::string param, grad;
    for (const auto& slot : op.inputs()) {
      if (slot.parameter() == "Param") param = slot.arguments(0);
      if (slot.parameter() == "Grad") grad = slot.arguments(0);
    }
    out.emplace_back(param, grad);
  }
  return out;
}

TEST(checked_math, products_and_sums_report_overflow) {
  EXPECT_EQ(checked_mul(two_to(31), two_to(31)), two_to(62));
  EXPECT_FALSE(checked_mul(two_to(32), two_to(32)));
  EXPECT_FALSE(checked_add(std::numeric_limits<std::int64_t>::max(), 1));
  const shape_t dims{two_to(32), two_to(32), 4};
  EXPECT_FALSE(checked_product(dims.begin(), dims.end()));
  EXPECT_EQ(checked_product(dims.begin(), dims.begin() + 1), two_to(32));
}

TEST(checked_math, representable_values) {
  EXPECT_TRUE(representable_as<std::int32_t>(2147483647.0));
  EXPECT_TRUE(representable_as<std::int32_t>(-2147483648.0));
  EXPECT_FALSE(representable_as<std::int32_t>(2147483648.0));
  EXPECT_FALSE(representable_as<std::int32_t>(1e10));
  EXPECT_FALSE(representable_as<std::int32_t>(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(representable_as<std::int64_t>(9.3e18));
  EXPECT_TRUE(representable_as<float>(std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(representable_as<float>(1e300));
}

TEST(hostile_input, shape_helpers_throw_instead_of_overflowing) {
  expect_error([] { numel_of({two_to(32), two_to(32), 4}); }, {"[4294967296, 4294967296, 4]",
                                                              "overflows int64"});
  // A 0 dim makes the whole count 0 but not a sub-product.
  expect_error([] { known_product({0, two_to(32), two_to(32)}, 1, 3); }, {"overflows int64"});
  // The element count fits but the byte size does not: refused before allocating.
  expect_error([] { tensor(dtype::fp32, {two_to(31), two_to(31)}); },
               {"byte size", "overflows int64"});
}

TEST(hostile_input, mul_with_dims_past_int64_names_op_and_variable) {
  mul_program p;
  set_dims(p.main, "x", {two_to(32), two_to(32), 4});
  expect_error([&] { validate_program(p.main); },
               {"(mul)", "variable 'x' [4294967296, 4294967296, 4]",
                "element count overflows int64"});
}

TEST(hostile_input, byte_size_past_int64) {
  mul_program p;
  set_dims(p.main, "y", {two_to(31), two_to(31)});
  expect_error([&] { validate_program(p.main); },
               {"(mul)", "variable 'y'", "byte size of FP32 overflows int64"});
}

TEST(hostile_input, zero_dim_does_not_hide_an_overflowing_sub_product) {
  mul_program p;
  set_dims(p.main, "x", {0, two_to(32), two_to(32)});
  expect_error([&] { validate_program(p.main); }, {"(mul)", "variable 'x'", "overflows int64"});
}

TEST(hostile_input, negative_dims_other_than_minus_one) {
  mul_program p;
  set_dims(p.main, "x", {-2, 3, 4});
  expect_error([&] { validate_program(p.main); },
               {"(mul)", "variable 'x' [-2, 3, 4]", "negative dim -2"});
  set_dims(p.main, "x", {-1, 3, 4}); // -1 is the unknown batch dimension
  EXPECT_NO_THROW(validate_program(p.main));
}

TEST(hostile_input, tensor_larger_than_the_limit) {
  mul_program p;
  // y is 12 x 5 FP32 = 240 bytes, x's known dims 3 x 4 = 48 bytes.
  EXPECT_NO_THROW(validate_program(p.main, 240));
  expect_error([&] { validate_program(p.main, 239); },
               {"(mul)", "variable 'y'", "needs 240 bytes", "239 bytes (--max-tensor-bytes)"});
  // Dims the machine could never hold are refused by the default limit, half its memory.
  set_dims(p.main, "y", {two_to(20), two_to(40)});
  expect_error([&] { validate_program(p.main); }, {"(mul)", "variable 'y'", "--max-tensor-bytes"});
  EXPECT_GT(default_max_tensor_bytes(), 0);
}

TEST(hostile_input, unused_variable_is_checked_too) {
  mul_program p;
  program_builder b(p.main, p.startup, 1);
  b.data("spare", {two_to(32), two_to(32)}, dtype::uint8);
  expect_error([&] { validate_program(p.main); }, {"variable 'spare'", "overflows int64"});
}

TEST(hostile_input, inferred_dims_are_checked) {
  fill_program p(dtype::int32);
  set_attr(*p.fill, "shape", std::vector<std::int64_t>{two_to(31), two_to(31)});
  set_dims(p.main, "c", {-1, -1});
  expect_error([&] { validate_program(p.main); },
               {"(fill_constant)", "inferred variable 'c'", "byte size of INT32 overflows int64"});
}

TEST(hostile_input, reshape_target_past_int64) {
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  b.data("x", {-1, 4}, dtype::fp32);
  auto& reshape = b.append_op("reshape2", {{"X", {"x"}}}, {{"Out", {"y"}}, {"XShape", {"xs"}}},
                              {{"shape", std::vector<std::int32_t>{-1, 4}}});
  set_attr(reshape, "shape", std::vector<std::int32_t>{1 << 30, 1 << 30, 1 << 30});
  expect_error([&] { validate_program(main); }, {"(reshape2)", "overflows int64"});
}

TEST(hostile_input, sgd_learning_rate_past_int64) {
  auto m = tiny_mlp();
  std::string rate;
  for (const auto& op : m.main.blocks(0).ops())
    for (const auto& slot : op.inputs())
      if (op.type() == "sgd" && slot.parameter() == "LearningRate") rate = slot.arguments(0);
  ASSERT_FALSE(rate.empty());
  set_dims(m.main, rate, {two_to(32), two_to(32)});
  expect_error([&] { validate_program(m.main); },
               {"(sgd)", "variable '" + rate + "'", "element count overflows int64"});
}

// The SSA builder is reached with validated programs; these bypass validation (the
// var_table overload) to show that its own sums are checked too.
TEST(hostile_input, reduce_mode_owner_of_a_parameter_past_int64) {
  auto m = tiny_mlp();
  var_table vars = validate_program(m.main);
  const auto params = sgd_params(m.main);
  vars[params[0].first].dims = {two_to(32), two_to(32)};
  build_strategy s;
  s.reduce = build_strategy::reduce_mode::reduce;
  expect_error([&] { build_ssa_graph(m.main, vars, 2, s, {}); },
               {"op #", "the element count of '" + params[0].first + "'", "overflows int64"});
}

TEST(hostile_input, reduce_mode_owner_load_past_int64) {
  auto m = tiny_mlp();
  var_table vars = validate_program(m.main);
  const auto params = sgd_params(m.main);
  ASSERT_GE(params.size(), 3u);
  for (int i = 0; i < 3; ++i) vars[params[i].first].dims = {7'000'000'000'000'000'000};
  build_strategy s;
  s.reduce = build_strategy::reduce_mode::reduce;
  expect_error([&] { build_ssa_graph(m.main, vars, 2, s, {}); },
               {"op #", "the element count owned by place", "overflows int64"});
}

TEST(hostile_input, fused_all_reduce_bucket_past_int64) {
  auto m = tiny_mlp();
  var_table vars = validate_program(m.main);
  const auto params = sgd_params(m.main);
  vars[params[0].second].dims = {two_to(62)};
  build_strategy s;
  s.fuse_all_reduce_bytes = 1 << 20;
  expect_error([&] { build_ssa_graph(m.main, vars, 2, s, {}); },
               {"op #", "fused all-reduce bucket's byte count with '" + params[0].second + "'",
                "overflows int64"});
}

TEST(hostile_input, build_strategy_limit_reaches_validation) {
  auto m = tiny_mlp();
  build_strategy s;
  s.max_tensor_bytes = 16;
  expect_error([&] { build_ssa_graph(m.main, 2, s, {}); }, {"16 bytes (--max-tensor-bytes)"});
}

TEST(hostile_input, fill_constant_int32_value_out_of_range) {
  fill_program p(dtype::int32);
  set_attr(*p.fill, "value", 1e10f);
  expect_error([&] { validate_program(p.main); },
               {"(fill_constant)", "Out: value 10000000000", "not representable as INT32"});
}

TEST(hostile_input, fill_constant_str_values_out_of_range) {
  for (auto [type, text, message] :
       {std::tuple{dtype::int32, "1e300", "str_value '1e300' is not representable as INT32"},
        std::tuple{dtype::int32, "nan", "str_value 'nan' is not representable as INT32"},
        std::tuple{dtype::int64, "99999999999999999999",
                   "str_value '99999999999999999999' is not representable as INT64"},
        std::tuple{dtype::fp32, "1e300", "str_value '1e300' is not representable as FP32"},
        std::tuple{dtype::fp32, "1e400", "str_value '1e400' is not representable as FP32"},
        std::tuple{dtype::int32, "12abc", "str_value '12abc' is not a valid INT32 value"}}) {
    fill_program p(type);
    set_attr(*p.fill, "str_value", std::string(text));
    expect_error([&] { validate_program(p.main); }, {"(fill_constant)", message});
  }
}

TEST(hostile_input, fill_constant_values_in_range_pass) {
  for (auto [type, text] : {std::pair{dtype::int32, "-2147483648"}, std::pair{dtype::fp32, "inf"},
                            std::pair{dtype::fp32, "-1e38"},
                            std::pair{dtype::int64, "9223372036854775807"}}) {
    fill_program p(type);
    set_attr(*p.fill, "str_value", std::string(text));
    EXPECT_NO_THROW(validate_program(p.main)) << text;
  }
  fill_program p(dtype::int64);
  set_attr(*p.fill, "value", 1e19f);
  expect_error([&] { validate_program(p.main); }, {"not representable as INT64"});
}

} // namespace
} // namespace pe

// The dtypes programs may declare: UINT8 (dropout masks) and BOOL (flags) validate next to
// FP32, INT64 and INT32, can be fed and fetched by both executors, and an unsupported dtype
// is rejected naming the variable and the supported ones.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "core/dtype.hpp"
#include "graph/builder.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/exec/scope.hpp"
#include "graph/validate.hpp"
#include "tests/support/expect_error.hpp"

namespace {

using pe::dtype;
using pe::tensor;
using pe::testing::expect_error;

TEST(Dtype, SupportedTypesAreThoseProgramsUse) {
  for (const dtype t : {dtype::fp32, dtype::int64, dtype::int32, dtype::uint8, dtype::boolean})
    EXPECT_TRUE(pe::is_supported(t)) << pe::to_string(t);
  for (const dtype t : {dtype::fp16, dtype::bf16, dtype::int8, dtype::int16, dtype::fp64})
    EXPECT_FALSE(pe::is_supported(t)) << pe::to_string(t);
}

/// x (FP32 [-1, 4]) and flags (BOOL [-1, 4]) fed; dropout of x gives a UINT8 mask, and
/// flags cast to UINT8 a second one.
struct typed_program {
  pe::proto::ProgramDesc main, startup;

  typed_program() {
    pe::program_builder b(main, startup, 1);
    const std::string x = b.data("x", {-1, 4}, dtype::fp32);
    const std::string flags = b.data("flags", {-1, 4}, dtype::boolean);
    b.append_op("dropout", {{"X", {x}}}, {{"Out", {"d"}}, {"Mask", {"mask"}}},
                {{"dropout_prob", 0.5f}, {"seed", std::int32_t{3}}});
    b.append_op("cast", {{"X", {flags}}}, {{"Out", {"flags_u8"}}},
                {{"in_dtype", static_cast<std::int32_t>(dtype::boolean)},
                 {"out_dtype", static_cast<std::int32_t>(dtype::uint8)}});
  }
};

pe::feed_map typed_feeds() {
  return {{"x", tensor::zeros(dtype::fp32, {4, 4})},
          {"flags", tensor::from_vector<bool>({true, false, false, true, false, false, true,
                                               true, true, true, false, false, true, false,
                                               true, false},
                                              {4, 4})}};
}

std::vector<std::uint8_t> bytes_of(const tensor& t) {
  const auto* p = static_cast<const std::uint8_t*>(t.raw());
  return {p, p + t.bytes()};
}

TEST(Dtype, Uint8AndBoolVariablesValidate) {
  typed_program p;
  const pe::var_table vars = pe::validate_program(p.main);
  EXPECT_EQ(vars.at("mask").type, dtype::uint8);
  EXPECT_EQ(vars.at("flags").type, dtype::boolean);
  EXPECT_EQ(vars.at("flags_u8").type, dtype::uint8);
}

TEST(Dtype, ReferenceExecutorFeedsAndFetchesUint8AndBool) {
  typed_program p;
  pe::scope vars;
  pe::reference_executor exe(p.main, vars);
  const pe::feed_map feeds = typed_feeds();
  const auto out = exe.run(feeds, {"mask", "flags", "flags_u8"});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].type(), dtype::uint8);
  EXPECT_EQ(out[0].shape(), (pe::shape_t{4, 4}));
  for (const std::uint8_t m : out[0].values<std::uint8_t>()) EXPECT_LE(m, 1);
  EXPECT_EQ(out[1].type(), dtype::boolean);
  EXPECT_EQ(bytes_of(out[1]), bytes_of(feeds.at("flags")));
  EXPECT_EQ(out[2].type(), dtype::uint8);
  EXPECT_EQ(bytes_of(out[2]), bytes_of(feeds.at("flags"))); // true -> 1, false -> 0

  pe::feed_map wrong = feeds;
  wrong["flags"] = tensor::zeros(dtype::uint8, {4, 4});
  expect_error([&] { exe.run(wrong, {"mask"}); },
               {"feed 'flags' has dtype UINT8 but the program declares BOOL"});
}

TEST(Dtype, ParallelExecutorConcatenatesUint8AndBoolFetches) {
  typed_program p;
  pe::parallel_executor exe({pe::place::cpu(0), pe::place::cpu(1)}, p.startup, p.main);
  const pe::feed_map feeds = typed_feeds();
  const auto out = exe.run(feeds, {"mask", "flags"});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].type(), dtype::uint8);
  EXPECT_EQ(out[0].shape(), (pe::shape_t{4, 4}));
  EXPECT_EQ(out[1].type(), dtype::boolean);
  EXPECT_EQ(bytes_of(out[1]), bytes_of(feeds.at("flags")));
}

TEST(Dtype, UnsupportedDtypeIsRejectedNamingTheVariable) {
  typed_program p;
  for (auto& v : *p.main.mutable_blocks(0)->mutable_vars())
    if (v.name() == "mask")
      v.mutable_type()->mutable_lod_tensor()->mutable_tensor()->set_data_type(
          pe::proto::VarType::FP16);
  expect_error([&] { pe::validate_program(p.main); },
               {"variable 'mask' has dtype FP16, which is not supported "
                "(FP32, INT64, INT32, UINT8, BOOL)"});
}

} // namespace

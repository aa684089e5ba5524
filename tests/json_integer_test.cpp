// JSON integers read from files (core/json_integer.hpp): what fits the type is read, what
// does not, floats included, is a pe::error, never a cast (a float cast out of range is
// undefined behaviour; the checkpoint_record fuzzer found one through nlohmann's get).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_integer.hpp"
#include "tests/support/expect_error.hpp"

namespace {

using nlohmann::json;
using pe::json_integer;
using pe::testing::expect_error;

TEST(JsonInteger, IntegersThatFitAreRead) {
  EXPECT_EQ(json_integer<std::int64_t>(json::parse("-5"), "x"), -5);
  EXPECT_EQ(json_integer<std::int64_t>(json::parse("9223372036854775807"), "x"), INT64_MAX);
  EXPECT_EQ(json_integer<std::uint64_t>(json::parse("18446744073709551615"), "x"), UINT64_MAX);
  EXPECT_EQ(json_integer<int>(json::parse("-2147483648"), "x"), INT32_MIN);
  EXPECT_EQ(json_integer<std::size_t>(json::parse("7"), "x"), 7u);
}

TEST(JsonInteger, WhatDoesNotFitIsRefusedNamingIt) {
  // Too long for 64 bits: nlohmann parses it as a float.
  expect_error([] { json_integer<std::int64_t>(json::parse("111111111111111111111111111111"), "\"step\""); },
               {"\"step\" is not an integer from -9223372036854775808 to 9223372036854775807"});
  expect_error([] { json_integer<std::int64_t>(json::parse("1e300"), "x"); }, {"x is not an integer"});
  expect_error([] { json_integer<std::int64_t>(json::parse("2.5"), "x"); }, {"x is not an integer"});
  expect_error([] { json_integer<std::int64_t>(json::parse("9223372036854775808"), "x"); }, {"x is not an integer"});
  expect_error([] { json_integer<std::uint64_t>(json::parse("-1"), "x"); }, {"x is not an integer from 0"});
  expect_error([] { json_integer<int>(json::parse("2147483648"), "x"); }, {"x is not an integer"});
  expect_error([] { json_integer<int>(json::parse("-2147483649"), "x"); }, {"x is not an integer"});
  expect_error([] { json_integer<int>(json::parse("\"5\""), "x"); }, {"x is not an integer"});
  expect_error([] { json_integer<int>(json::parse("true"), "x"); }, {"x is not an integer"});
}

} // namespace

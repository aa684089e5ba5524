// The kinds of pe::error (core/error.hpp): every kind has a name of its own, the list of
// kinds keeps in step with the enum, and an error carries its kind without changing its
// message.
#include <cstddef>
#include <set>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace pe {
namespace {

TEST(ErrorKind, EveryKindHasADistinctNonEmptyName) {
  std::set<std::string> names;
  for (error_kind kind : all_error_kinds) {
    const std::string name = to_string(kind);
    EXPECT_FALSE(name.empty()) << static_cast<int>(kind);
    EXPECT_TRUE(names.insert(name).second) << "two kinds are called " << name;
  }
  EXPECT_EQ(names.size(), all_error_kinds.size());
}

TEST(ErrorKind, TheListHoldsEveryKindInDeclarationOrder) {
  for (std::size_t i = 0; i < all_error_kinds.size(); ++i)
    EXPECT_EQ(static_cast<std::size_t>(all_error_kinds[i]), i);
  // A kind added to the enum and to to_string but not to the list has a name here.
  const auto past_the_list = static_cast<error_kind>(all_error_kinds.size());
  EXPECT_EQ(to_string(past_the_list), "error_kind(" + std::to_string(all_error_kinds.size()) + ")");
}

TEST(ErrorKind, AnErrorIsOrdinaryUnlessGivenAKindAndKeepsItsMessage) {
  const error plain("boom");
  EXPECT_EQ(plain.kind(), error_kind::ordinary);
  EXPECT_STREQ(plain.what(), "boom");

  const error consequence(error_kind::consequence, "an input's writer failed");
  EXPECT_EQ(consequence.kind(), error_kind::consequence);
  EXPECT_STREQ(consequence.what(), "an input's writer failed");

  try {
    throw consequence;
  } catch (const std::runtime_error& e) { // still caught as before, message unchanged
    EXPECT_STREQ(e.what(), "an input's writer failed");
    EXPECT_EQ(dynamic_cast<const error&>(e).kind(), error_kind::consequence);
  }
}

} // namespace
} // namespace pe

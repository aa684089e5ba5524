// pe-actor-run's choice flags (--executor, --sync, --reduce), parsed once into the engine's
// enums from one spelling table each: every value reads back as spelled, and anything else
// is refused naming the flag, every spelling and what was given.
#include <gtest/gtest.h>

#include "apps/run/option_choice.hpp"

namespace pe {
namespace {

template <class E>
void expect_round_trips() {
  for (const auto& [value, text] : choice_spellings<E>::table) {
    EXPECT_EQ(spelling(value), text);
    EXPECT_EQ(parse_choice<E>("--flag", std::string(text)), value);
  }
}

TEST(OptionChoice, EverySpellingReadsBackAsItsValue) {
  expect_round_trips<executor_choice>();
  expect_round_trips<sync_mode>();
  expect_round_trips<build_strategy::reduce_mode>();
  EXPECT_EQ(spelling(build_strategy::reduce_mode::all_reduce), "allreduce");
  EXPECT_EQ(spelling(sync_mode::wait), "wait");
}

TEST(OptionChoice, AnythingElseIsRefusedNamingTheFlagAndTheChoices) {
  try {
    parse_choice<executor_choice>("--executor", "gpu");
    FAIL() << "expected pe::error";
  } catch (const error& e) {
    EXPECT_STREQ(e.what(), "--executor: expected actor or reference, got 'gpu'");
  }
  EXPECT_THROW(parse_choice<sync_mode>("--sync", "Event"), error); // spellings are exact
  EXPECT_THROW(parse_choice<build_strategy::reduce_mode>("--reduce", ""), error);
  EXPECT_EQ(spellings<build_strategy::reduce_mode>(), "allreduce or reduce");
}

} // namespace
} // namespace pe

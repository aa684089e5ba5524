// The conventions the trace writer (actors/trace_export.cpp) and pe-actor-trace share
// (actors/trace_format.hpp): lane naming and its inverse, and the ns <-> us conversion.
#include <gtest/gtest.h>

#include "actors/trace_format.hpp"

namespace pe {
namespace {

TEST(TraceFormat, LanesNameTheirGroupAndReadBack) {
  EXPECT_EQ(trace_format::track_name("cpu:0", 0), "cpu:0");
  EXPECT_EQ(trace_format::track_name("cpu:0", 1), "cpu:0 (2)");
  EXPECT_EQ(trace_format::track_name(trace_format::collectives_track, 2), "collectives (3)");
  for (const char* group : {"cpu:0", "gpu:1@dev0", "collectives", "steps"})
    for (std::size_t lane : {0u, 1u, 9u})
      EXPECT_EQ(trace_format::track_group(trace_format::track_name(group, lane)), group);
  EXPECT_EQ(trace_format::track_group("cpu:0 (x"), "cpu:0 (x");
}

TEST(TraceFormat, TimesAreMicrosecondsOfWholeNanoseconds) {
  EXPECT_DOUBLE_EQ(trace_format::to_us(1500), 1.5);
  EXPECT_DOUBLE_EQ(trace_format::to_us(-2), -0.002);
  for (std::int64_t ns : {0LL, 1LL, 999LL, 123456789LL, -42LL, 86'400'000'000'000LL})
    EXPECT_EQ(trace_format::to_ns(trace_format::to_us(ns)), ns);
}

} // namespace
} // namespace pe

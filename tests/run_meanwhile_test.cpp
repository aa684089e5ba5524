// parallel_executor::run_meanwhile: the caller's work for its next step (pe-actor-run copies
// its next batch there) runs on the calling thread while the step's kernels run, once; its
// failure comes after the step's own; a run that fails before its step drops it.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "core/error.hpp"
#include "core/place_list.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/test_gate.hpp"

namespace {

using namespace pe;
using pe::testing::argmax_feed;
using pe::testing::gate;
using pe::testing::gated_mlp;

execution_strategy two_threads() {
  execution_strategy exec;
  exec.num_threads = 2;
  return exec;
}

TEST(RunMeanwhile, RunsOnTheCallingThreadWhileTheStepIsInFlight) {
  const model_programs m = gated_mlp(1);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, two_threads());
  const feed_map feed = argmax_feed(m, 8, 4);
  exe.run(feed, {m.loss}); // the graph is built

  // Place 1's gate holds the step until the work releases it: the step can end only if the
  // work runs while it is in flight (otherwise the gate gives up after gate_limit and the
  // work finds no kernel waiting).
  gate().arm(1);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  bool found_the_step_waiting = false, on_the_caller = false;
  exe.run_meanwhile([&] {
    ++calls;
    on_the_caller = std::this_thread::get_id() == caller;
    found_the_step_waiting = gate().wait_until_blocked();
    gate().release();
  });
  EXPECT_NO_THROW(exe.run(feed, {m.loss}));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(on_the_caller);
  EXPECT_TRUE(found_the_step_waiting);

  exe.run(feed, {m.loss}); // once: the next run has none
  EXPECT_EQ(calls, 1);
}

TEST(RunMeanwhile, ItsFailureComesAfterTheStepRan) {
  const model_programs m = gated_mlp(0);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, two_threads());
  const feed_map feed = argmax_feed(m, 8, 4);
  const tensor before = exe.place_scope(0).get("fc_0.w_0").clone();
  exe.run_meanwhile([] { throw std::runtime_error("the next batch could not be read"); });
  try {
    exe.run(feed, {m.loss});
    FAIL() << "the work's failure was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "the next batch could not be read");
  }
  // The step itself ran to its end: the parameters moved, and the executor goes on.
  const auto after = exe.place_scope(0).get("fc_0.w_0").values<float>();
  EXPECT_FALSE(std::equal(after.begin(), after.end(), before.values<float>().begin()));
  EXPECT_NO_THROW(exe.run(feed, {m.loss}));
}

TEST(RunMeanwhile, TheStepsOwnFailureComesFirst) {
  const model_programs m = gated_mlp(0);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, two_threads());
  feed_map bad = argmax_feed(m, 8, 4);
  bad[m.label] = bad[m.label].clone();
  bad[m.label].values<std::int64_t>()[7] = 17; // out of range on place 1
  bool ran = false;
  exe.run_meanwhile([&] {
    ran = true;
    throw std::runtime_error("second");
  });
  try {
    exe.run(bad, {m.loss});
    FAIL() << "a bad label trained";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("softmax_with_cross_entropy"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(ran);
}

TEST(RunMeanwhile, ARunThatFailsBeforeItsStepDropsIt) {
  const model_programs m = gated_mlp(0);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, two_threads());
  const feed_map feed = argmax_feed(m, 8, 4);
  int calls = 0;
  exe.run_meanwhile([&] { ++calls; });
  EXPECT_THROW(exe.run({{m.image, feed.at(m.image)}}, {m.loss}), error); // no label
  EXPECT_EQ(calls, 0);
  exe.run(feed, {m.loss});
  EXPECT_EQ(calls, 0); // not carried over to the next run
}

} // namespace

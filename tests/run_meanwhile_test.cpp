// parallel_executor::run_meanwhile: the caller's work for its next step (pe-actor-run copies
// its next batch there) runs while the step's kernels run, once: on the calling thread, or,
// where the CPU places take every core, in pieces on the places' idle threads; it is done
// when the run returns; its failure comes after the step's own; a run that fails before its
// step drops it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "collectives/net/process_group.hpp"
#include "core/error.hpp"
#include "core/place_list.hpp"
#include "devices/host_cpus.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/loopback_transport.hpp"
#include "tests/support/test_gate.hpp"

namespace {

using namespace pe;
using pe::testing::argmax_feed;
using pe::testing::gate;
using pe::testing::gated_mlp;
using pe::testing::rows_of;

execution_strategy two_threads() {
  execution_strategy exec;
  exec.num_threads = 2;
  return exec;
}

/// Whether the executor gives the meanwhile work to the places' threads: its places (2
/// here) take every CPU this process may use (parallel_executor::run_meanwhile).
bool places_take_the_work(int places) {
  return static_cast<std::size_t>(places) >= allowed_cpus().size();
}

TEST(RunMeanwhile, RunsWhileTheStepIsInFlight) {
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
  // Where the places fill the cores, place 0's thread, idle while place 1 is held, takes it.
  EXPECT_EQ(on_the_caller, !places_take_the_work(2));
  EXPECT_TRUE(found_the_step_waiting);

  exe.run(feed, {m.loss}); // once: the next run has none
  EXPECT_EQ(calls, 1);
}

TEST(RunMeanwhile, EveryPieceRunsOnceAndIsDoneWhenTheRunReturns) {
  const model_programs m = gated_mlp(0);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, two_threads());
  const feed_map feed = argmax_feed(m, 8, 4);
  for (int round = 0; round < 20; ++round) {
    constexpr int pieces = 16;
    std::vector<std::atomic<int>> runs(pieces);
    std::vector<int> written(pieces, 0); // plain: the run's return must publish the writes
    exe.run_meanwhile(
        [&](int k) {
          runs[static_cast<std::size_t>(k)].fetch_add(1);
          written[static_cast<std::size_t>(k)] = k + 1;
        },
        pieces);
    exe.run(feed, {m.loss});
    for (int k = 0; k < pieces; ++k) {
      ASSERT_EQ(runs[static_cast<std::size_t>(k)].load(), 1) << "round " << round << ", piece " << k;
      ASSERT_EQ(written[static_cast<std::size_t>(k)], k + 1);
    }
  }
  EXPECT_THROW(exe.run_meanwhile([](int) {}, -1), error);
  int calls = 0;
  exe.run_meanwhile([&](int) { ++calls; }, 0); // no pieces: no work
  exe.run(feed, {m.loss});
  EXPECT_EQ(calls, 0);
}

TEST(RunMeanwhile, PiecesGoToThePlacesThreadsWhereThePlacesFillTheCores) {
  if (!places_take_the_work(2)) GTEST_SKIP() << "more than 2 CPUs: the calling thread runs the work";
  const model_programs m = gated_mlp(1);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, two_threads());
  const feed_map feed = argmax_feed(m, 8, 4);
  exe.run(feed, {m.loss});
  // Place 1 is held until a piece finds it held and releases it: the calling thread takes
  // pieces only once the step's work is done, so an idle place's thread must take them.
  gate().arm(1);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> on_the_caller{0}, found_the_step_waiting{0};
  exe.run_meanwhile(
      [&](int k) {
        if (std::this_thread::get_id() == caller) ++on_the_caller;
        if (k == 0) {
          found_the_step_waiting += gate().wait_until_blocked() ? 1 : 0;
          gate().release();
        }
      },
      4);
  EXPECT_NO_THROW(exe.run(feed, {m.loss}));
  EXPECT_EQ(found_the_step_waiting.load(), 1);
  EXPECT_LT(on_the_caller.load(), 4) << "every piece ran on the calling thread";
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

TEST(RunMeanwhile, CountsThePlacesOfTheOtherProcessesOnThisHost) {
  // Two processes of one place each, joined in memory over the shared-memory backend, which
  // knows that both run on this host: together their places take every core of a 2-CPU
  // machine, where one process's place alone does not.
  const model_programs m = gated_mlp(0);
  pe::testing::loopback_network network(2);
  process_group_options options;
  options.collective_backend = "shm";
  std::vector<std::unique_ptr<process_group>> groups;
  for (int r = 0; r < 2; ++r)
    groups.push_back(std::make_unique<process_group>(network.transport(r), 0, std::chrono::minutes(1), options));
  std::vector<std::future<std::unique_ptr<parallel_executor>>> making;
  for (int r = 0; r < 2; ++r)
    making.push_back(std::async(std::launch::async, [&, r] {
      return std::make_unique<parallel_executor>(std::vector<place>{place::cpu(r)}, m.startup, m.main,
                                                 build_strategy{}, execution_strategy{1, sync_mode::event, groups[r].get()});
    }));
  std::vector<std::unique_ptr<parallel_executor>> processes;
  for (auto& f : making) processes.push_back(f.get());
  const feed_map batch = argmax_feed(m, 8, 4);
  auto step = [&](int r) {
    parallel_executor& exe = *processes[static_cast<std::size_t>(r)];
    const auto [first, count] = exe.share_of(8);
    exe.run_share(rows_of(batch, first, count), 8, {m.loss});
  };
  auto both_step = [&] {
    auto first = std::async(std::launch::async, step, 0);
    step(1);
    first.get();
  };
  both_step(); // the graphs are built

  // Process 1 starts its step 100 ms after process 0: process 0's place waits for the
  // all-reduce meanwhile, idle, and takes the pieces where it may. Written before the run
  // offers the work, `runner` is the thread running process 0's step.
  constexpr int pieces = 8;
  std::thread::id runner;
  std::atomic<int> runs{0}, on_the_runner{0};
  processes[0]->run_meanwhile(
      [&](int) {
        ++runs;
        if (std::this_thread::get_id() == runner) ++on_the_runner;
      },
      pieces);
  auto first = std::async(std::launch::async, [&] {
    runner = std::this_thread::get_id();
    step(0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  step(1);
  first.get();
  EXPECT_EQ(runs.load(), pieces);
  if (places_take_the_work(2))
    EXPECT_LT(on_the_runner.load(), pieces) << "every piece ran on the thread running the step";
  else
    EXPECT_EQ(on_the_runner.load(), pieces) << "a place's thread took a piece with cores to spare";
}

} // namespace

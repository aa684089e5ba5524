// The stall watch of the actor executor: a step that makes no progress gets a report naming
// who waits for whom and the root cause, then fails (or, in report mode, keeps waiting); a
// step that is slow but moving never does. Stalls are injected with a test op, "test_gate"
// (tests/support/test_gate.hpp): a pass-through whose kernel on a chosen place blocks until
// the test releases it (bounded: every wait here has a way out). CPU places, and GPU places
// simulated on the host (tests/support/host_gpu_device.hpp) for the GPU streams' timed wait.
#include <algorithm>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "core/error.hpp"
#include "core/place_list.hpp"
#include "devices/device.hpp"
#include "graph/op_registry.hpp"
#include "kernels/kernel.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/host_gpu_device.hpp"
#include "tests/support/test_gate.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;
using pe::testing::argmax_feed;
using pe::testing::argmax_mlp;
using pe::testing::gate;
using pe::testing::gated_mlp;

/// How long anything that should happen gets before the test calls it a hang.
constexpr auto limit = pe::testing::gate_limit;

/// The reports an executor told, kept for the test (told on the thread that runs the step).
struct report_log {
  std::mutex mutex;
  std::vector<stall_report> reports;
  std::function<void(const stall_report&)> sink() {
    return [this](const stall_report& r) {
      std::lock_guard<std::mutex> guard(mutex);
      reports.push_back(r);
    };
  }
  std::vector<stall_report> all() {
    std::lock_guard<std::mutex> guard(mutex);
    return reports;
  }
};

execution_strategy watched(double timeout_s, stall_action action, report_log& log) {
  execution_strategy e;
  e.num_threads = 2;
  e.stall_timeout_s = timeout_s;
  e.on_stall = action;
  e.on_report = log.sink();
  return e;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Runs one step on another thread: its error ("" when it passed), or nullopt when it did
/// not return within `within`.
std::optional<std::string> step_within(parallel_executor& exe, const feed_map& feed, const std::string& loss,
                                       std::chrono::seconds within, std::thread& runner) {
  auto outcome = std::make_shared<std::promise<std::string>>();
  auto result = outcome->get_future();
  runner = std::thread([&exe, feed, loss, outcome] {
    try {
      exe.run(feed, {loss});
      outcome->set_value("");
    } catch (const std::exception& e) {
      outcome->set_value(e.what());
    }
  });
  if (result.wait_for(within) != std::future_status::ready) return std::nullopt;
  return result.get();
}

TEST(stall, a_blocked_kernel_fails_the_step_naming_it_and_the_collective_that_waits) {
  auto m = gated_mlp(1);
  report_log log;
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, watched(0.5, stall_action::fail, log));
  const auto feed = argmax_feed(m, 8, 1);
  exe.run(feed, {m.loss}); // the gate passes: a healthy step makes no report
  EXPECT_TRUE(log.all().empty());

  gate().arm(0);
  std::thread runner;
  const auto outcome = step_within(exe, feed, m.loss, limit, runner);
  ASSERT_TRUE(gate().wait_until_blocked());
  gate().release(); // lets cpu:0's thread go, so the executor can end
  runner.join();
  ASSERT_TRUE(outcome.has_value()) << "the stalled step did not fail within " << limit.count() << " s";
  const std::string& error = *outcome;
  EXPECT_TRUE(has(error, "step 2 stalled")) << error;
  EXPECT_TRUE(has(error, "root cause: op #0 (test_gate) on cpu:0 has not finished: running for")) << error;
  EXPECT_TRUE(has(error, "on the compute stream of cpu:0")) << error;
  EXPECT_TRUE(exe.stalled());

  const auto reports = log.all();
  ASSERT_EQ(reports.size(), 1u);
  const stall_report& r = reports[0];
  // PE_PRINT_STALL_REPORT=1 shows the report and the error (README's "When a step stalls").
  if (std::getenv("PE_PRINT_STALL_REPORT") != nullptr) std::cout << r.text << "error: " << error << '\n';
  EXPECT_EQ(r.step, 2u);
  EXPECT_FALSE(r.on_demand);
  EXPECT_GE(r.idle_s, 0.5);
  // The chain: cpu:1 ran ahead to its first all-reduce and waits there for cpu:0, whose
  // gradient waits (through the backward pass) on the blocked gate.
  ASSERT_GE(r.chain.size(), 3u);
  EXPECT_TRUE(has(r.chain[0], "all_reduce #")) << r.text;
  EXPECT_TRUE(has(r.chain[0], "on cpu:1 waits for cpu:0 (at #")) << r.text;
  // ... names the gradient version cpu:0 has not produced, and its producer.
  EXPECT_TRUE(has(r.chain[0], "cpu:0 has not joined: it waits for ")) << r.text;
  EXPECT_TRUE(has(r.chain[0], "@GRAD@0 on cpu:0 from op #")) << r.text;
  EXPECT_TRUE(has(r.chain[r.chain.size() - 2], "is queued on the compute stream of cpu:0 behind")) << r.text;
  EXPECT_TRUE(has(r.text, "all_reduce #")) << r.text;
  EXPECT_TRUE(has(r.text, "waits for cpu:0")) << r.text;
  EXPECT_TRUE(has(r.chain.back(), "op #0 (test_gate) on cpu:0 has not finished")) << r.text;
  // The listing: the gate's reader on cpu:0 is queued behind it, and the streams show it.
  EXPECT_TRUE(has(r.text, "op #0 (test_gate) on cpu:0: running for")) << r.text;
  EXPECT_TRUE(has(r.text, "queued on the compute stream of cpu:0 behind")) << r.text;
  EXPECT_TRUE(has(r.text, "cpu:0 compute: ")) << r.text;
  EXPECT_TRUE(has(r.text, "joined cpu:1")) << r.text;
  EXPECT_TRUE(has(r.text, "missing cpu:0 (at #")) << r.text;

  // The next step waits for the stalled step's work (released above), rebuilds, and trains.
  EXPECT_NO_THROW(exe.run(feed, {m.loss}));
  EXPECT_FALSE(exe.stalled());
  EXPECT_EQ(log.all().size(), 1u);
}

TEST(stall, an_executor_destroyed_after_a_stall_waits_for_the_stalled_work) {
  // The stalled step failed while its gate's kernel still ran; destroying the executor then
  // must wait for that kernel (its completion reads the executor's graph), not free the
  // graph under it.
  auto m = gated_mlp(1);
  report_log log;
  auto exe = std::make_unique<parallel_executor>(make_cpu_places(2), m.startup, m.main, build_strategy{},
                                                 watched(0.3, stall_action::fail, log));
  const auto feed = argmax_feed(m, 8, 1);
  gate().arm(0);
  std::thread runner;
  const auto outcome = step_within(*exe, feed, m.loss, limit, runner);
  runner.join();
  ASSERT_TRUE(outcome.has_value() && has(*outcome, "stalled")) << outcome.value_or("(no outcome)");
  ASSERT_TRUE(gate().wait_until_blocked()); // still running
  constexpr auto hold = std::chrono::milliseconds(400);
  std::thread releaser([hold] {
    std::this_thread::sleep_for(hold);
    gate().release();
  });
  const auto start = std::chrono::steady_clock::now();
  exe.reset();
  const auto took = std::chrono::steady_clock::now() - start;
  releaser.join();
  EXPECT_GE(took, hold - std::chrono::milliseconds(50)) << "destroyed while the stalled kernel ran";
}

TEST(stall, report_mode_reports_and_keeps_waiting) {
  auto m = gated_mlp(1);
  report_log log;
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, watched(0.3, stall_action::report, log));
  const auto feed = argmax_feed(m, 8, 2);
  gate().arm(1);
  std::thread runner;
  auto outcome = std::async(std::launch::async, [&] {
    try {
      return std::string(exe.run(feed, {m.loss}).size() == 1 ? "" : "no loss");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  ASSERT_TRUE(gate().wait_until_blocked());
  // Reports come while the step waits, and the step goes on waiting.
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (log.all().size() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  ASSERT_GE(log.all().size(), 2u);
  EXPECT_EQ(outcome.wait_for(0s), std::future_status::timeout);
  gate().release();
  ASSERT_EQ(outcome.wait_for(limit), std::future_status::ready);
  EXPECT_EQ(outcome.get(), ""); // report mode: the step finished once released
  // The reports while the gate held name it; on a loaded machine another may come before
  // the gate closed (a slow first step) or after it opened, naming what ran then.
  const auto reports = log.all();
  EXPECT_TRUE(std::any_of(reports.begin(), reports.end(), [](const stall_report& r) {
    return has(r.root_cause, "op #0 (test_gate) on cpu:1 has not finished");
  })) << reports.front().text;
  EXPECT_FALSE(exe.stalled());
}

TEST(stall, a_slow_but_moving_step_never_stalls) {
  // 20 gates of 60 ms each on cpu:0: the step takes over a second, more than twice the
  // 0.5 s timeout, but something finishes every 60 ms.
  auto m = gated_mlp(20);
  report_log log;
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, watched(0.5, stall_action::fail, log));
  {
    std::lock_guard<std::mutex> guard(gate().mutex);
    gate().blocked_place = 0;
    gate().sleep_ms = 60;
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(exe.run(argmax_feed(m, 8, 3), {m.loss}));
  const auto took = std::chrono::steady_clock::now() - start;
  {
    std::lock_guard<std::mutex> guard(gate().mutex);
    gate().sleep_ms = 0;
  }
  EXPECT_GT(took, 1s); // the premise: slower than the timeout
  EXPECT_TRUE(log.all().empty());
}

TEST(stall, an_on_demand_report_leaves_the_step_alone) {
  auto m = gated_mlp(1);
  report_log log;
  std::atomic<bool> asked{false};
  execution_strategy e = watched(0, stall_action::fail, log); // no stall watch at all
  e.report_request = &asked;
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, e);
  const auto feed = argmax_feed(m, 8, 4);
  gate().arm(0);
  auto outcome = std::async(std::launch::async, [&] {
    try {
      exe.run(feed, {m.loss});
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  ASSERT_TRUE(gate().wait_until_blocked());
  asked = true;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (log.all().empty() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  ASSERT_EQ(log.all().size(), 1u);
  EXPECT_FALSE(asked.load()); // the executor took the request
  gate().release();
  ASSERT_EQ(outcome.wait_for(limit), std::future_status::ready);
  EXPECT_EQ(outcome.get(), "");
  const stall_report r = log.all().front();
  EXPECT_TRUE(r.on_demand);
  EXPECT_TRUE(has(r.text, "progress report: step 1")) << r.text;
  EXPECT_TRUE(has(r.text, "furthest wait: ")) << r.text;
  // Taken whenever the flag was seen (cpu:1 may still be running its forward pass then):
  // the blocked gate is in the listing, whatever the chain's end at that moment.
  EXPECT_TRUE(has(r.text, "op #0 (test_gate) on cpu:0: running for")) << r.text;
}

TEST(stall, a_kernel_blocked_on_a_gpu_place_fails_the_step) {
  // GPU places simulated on the host (queued streams with a host thread each, running the
  // CPU's kernels): the step's end waits on their streams with synchronize_for, so a GPU
  // stream whose launch code never returns is a stall with a report, not a wait for ever.
  pe::testing::simulate_gpu_places();
  auto m = gated_mlp(1);
  report_log log;
  parallel_executor exe({place::gpu(0, 0), place::gpu(1, 0)}, m.startup, m.main, {},
                        watched(0.5, stall_action::fail, log));
  const auto feed = argmax_feed(m, 8, 1);
  exe.run(feed, {m.loss});
  EXPECT_TRUE(log.all().empty());

  gate().arm(0);
  std::thread runner;
  const auto outcome = step_within(exe, feed, m.loss, 20s, runner);
  const bool blocked = gate().wait_until_blocked();
  gate().release();
  runner.join();
  ASSERT_TRUE(blocked);
  ASSERT_TRUE(outcome.has_value()) << "the stalled step on gpu:0 did not fail within 20 s";
  EXPECT_TRUE(has(*outcome, "step 2 stalled")) << *outcome;
  const auto reports = log.all();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(has(reports[0].text, "gpu:0")) << reports[0].text;
  EXPECT_TRUE(has(reports[0].text, "test_gate")) << reports[0].text;
  // The next step waits for the stalled work (released above), rebuilds, and trains.
  EXPECT_NO_THROW(exe.run(feed, {m.loss}));
  EXPECT_FALSE(exe.stalled());
}

TEST(stall, a_stream_that_never_completes_times_out_its_timed_wait) {
  auto d = open_device(place::cpu(0));
  stream& s = d->get_stream(stream_kind::copy);
  std::promise<void> go;
  auto released = go.get_future().share();
  s.enqueue([released] { released.wait_for(limit); });
  s.enqueue([] {});
  EXPECT_FALSE(s.synchronize_for(50ms).has_value()); // not finished: no answer, no hang
  const auto counts = s.counts();
  EXPECT_EQ(counts.enqueued, 2u);
  EXPECT_EQ(counts.completed, 0u);
  go.set_value();
  const auto done = s.synchronize_for(std::chrono::duration_cast<std::chrono::milliseconds>(limit));
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(*done);
  EXPECT_EQ(s.counts().completed, 2u);
}

TEST(stall, a_bad_timeout_is_refused) {
  auto m = argmax_mlp("sgd", 0.1f);
  execution_strategy e;
  for (double bad : {-1.0, std::nan(""), 1e12}) {
    e.stall_timeout_s = bad;
    try {
      parallel_executor exe(make_cpu_places(1), m.startup, m.main, {}, e);
      ADD_FAILURE() << "took a stall timeout of " << bad;
    } catch (const error& err) {
      EXPECT_TRUE(has(err.what(), "the stall timeout must be 0 (off) or positive seconds")) << err.what();
    }
  }
}

} // namespace

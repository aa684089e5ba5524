// The actor executor against the reference executor: data-parallel training on 1-4 CPU
// places in AllReduce and Reduce modes, uneven splits, determinism, errors, teardown, memory.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <thread>

#include "actors/parallel_executor.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/models/mlp.hpp"
#include "tests/support/batches.hpp"
#include "core/place_list.hpp"

namespace {

using namespace pe;
using pe::testing::argmax_batch;
using pe::testing::argmax_feed;
using pe::testing::argmax_mlp;
using reduce_mode = build_strategy::reduce_mode;

float scalar(const tensor& t) { return t.values<float>()[0]; }

struct trace {
  std::vector<float> losses;
  scope* params = nullptr;
};

std::vector<float> reference_losses(const model_programs& m, scope& vars, int steps, std::int64_t batch) {
  reference_executor(m.startup, vars).run({}, {});
  reference_executor main(m.main, vars);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(scalar(main.run(argmax_feed(m, batch, 500 + s), {m.loss})[0]));
  return losses;
}

std::vector<float> actor_losses(parallel_executor& exe, const model_programs& m, int steps, std::int64_t batch) {
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(scalar(exe.run(argmax_feed(m, batch, 500 + s), {m.loss})[0]));
  return losses;
}

void expect_close(float a, float b, float rel, const std::string& what) {
  EXPECT_LE(std::abs(a - b), rel * std::max(std::abs(a), std::abs(b)) + 1e-7f)
      << what << ": " << a << " vs " << b;
}

/// Every parameter of `m` on every place of `exe` matches the reference scope.
void expect_same_parameters(const parallel_executor& exe, const scope& reference,
                            const model_programs& m, float rel) {
  for (const auto& v : m.main.blocks(0).vars()) {
    if (!v.is_parameter()) continue;
    auto want = reference.get(v.name()).values<float>();
    for (int p = 0; p < exe.num_places(); ++p) {
      auto got = exe.place_scope(p).get(v.name()).values<float>();
      ASSERT_EQ(got.size(), want.size());
      float worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), 1e-2f));
      EXPECT_LE(worst, rel) << v.name() << " on place " << p;
    }
  }
}

struct mode_case {
  int places;
  reduce_mode reduce;
  const char* optimizer;
  float lr;
  sync_mode sync = sync_mode::event;
};

class matches_reference : public ::testing::TestWithParam<mode_case> {};

TEST_P(matches_reference, losses_and_parameters_for_ten_steps) {
  auto c = GetParam();
  auto m = argmax_mlp(c.optimizer, c.lr);
  scope reference;
  auto want = reference_losses(m, reference, 10, 24);
  build_strategy build;
  build.reduce = c.reduce;
  parallel_executor exe(make_cpu_places(c.places), m.startup, m.main, build, {2, c.sync});
  auto got = actor_losses(exe, m, 10, 24);
  for (int s = 0; s < 10; ++s) expect_close(got[s], want[s], 1e-5f, "step " + std::to_string(s));
  expect_same_parameters(exe, reference, m, 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(
    parallel_executor, matches_reference,
    ::testing::Values(mode_case{1, reduce_mode::all_reduce, "sgd", 0.2f},
                      mode_case{2, reduce_mode::all_reduce, "sgd", 0.2f},
                      mode_case{3, reduce_mode::all_reduce, "sgd", 0.2f},
                      mode_case{4, reduce_mode::all_reduce, "sgd", 0.2f},
                      mode_case{2, reduce_mode::all_reduce, "adam", 0.01f},
                      mode_case{4, reduce_mode::all_reduce, "adam", 0.01f},
                      mode_case{2, reduce_mode::reduce, "sgd", 0.2f},
                      mode_case{3, reduce_mode::reduce, "sgd", 0.2f},
                      mode_case{4, reduce_mode::reduce, "adam", 0.01f},
                      mode_case{3, reduce_mode::all_reduce, "momentum", 0.05f},
                      mode_case{1, reduce_mode::all_reduce, "sgd", 0.2f, sync_mode::wait},
                      mode_case{2, reduce_mode::all_reduce, "sgd", 0.2f, sync_mode::wait},
                      mode_case{4, reduce_mode::all_reduce, "adam", 0.01f, sync_mode::wait},
                      mode_case{3, reduce_mode::reduce, "sgd", 0.2f, sync_mode::wait},
                      mode_case{4, reduce_mode::reduce, "adam", 0.01f, sync_mode::wait}));

// Every place issues its collectives in one sequence (0, 1, 2, ... across steps), whatever
// the order the scheduler ran the op actors in: the communicator records each place's
// launches in the order its communication stream ran them.
TEST(parallel_executor, places_issue_collectives_in_one_sequence) {
  auto m = argmax_mlp("sgd", 0.2f);
  struct setup {
    int places;
    reduce_mode reduce;
    std::int64_t fuse_bytes;
    sync_mode sync;
  };
  for (const setup& c : {setup{4, reduce_mode::all_reduce, 0, sync_mode::event},
                         setup{3, reduce_mode::all_reduce, 64, sync_mode::event},
                         setup{4, reduce_mode::reduce, 0, sync_mode::event},
                         setup{2, reduce_mode::all_reduce, 0, sync_mode::wait}}) {
    build_strategy build;
    build.reduce = c.reduce;
    build.fuse_all_reduce_bytes = c.fuse_bytes;
    parallel_executor exe(make_cpu_places(c.places), m.startup, m.main, build, {2, c.sync});
    constexpr int steps = 6;
    actor_losses(exe, m, steps, 24);
    std::size_t per_step = 0;
    for (const auto& op : exe.graph().ops) per_step += is_collective(op.what) ? 1 : 0;
    ASSERT_GT(per_step, 1u);
    std::vector<std::uint64_t> want(per_step * steps);
    std::iota(want.begin(), want.end(), 0);
    auto history = exe.collective_history();
    ASSERT_EQ(history.size(), static_cast<std::size_t>(c.places));
    for (int p = 0; p < c.places; ++p) EXPECT_EQ(history[static_cast<std::size_t>(p)], want) << "place " << p;
  }
}

TEST(parallel_executor, fused_all_reduce_matches_reference) {
  auto m = argmax_mlp("sgd", 0.2f);
  scope reference;
  auto want = reference_losses(m, reference, 5, 24);
  build_strategy build;
  build.fuse_all_reduce_bytes = 1024;
  parallel_executor exe(make_cpu_places(3), m.startup, m.main, build, {2});
  auto got = actor_losses(exe, m, 5, 24);
  for (int s = 0; s < 5; ++s) expect_close(got[s], want[s], 1e-5f, "step " + std::to_string(s));
  expect_same_parameters(exe, reference, m, 1e-4f);
}

TEST(parallel_executor, uneven_splits_equal_the_global_batch) {
  // 10 rows on 4 places (3, 3, 2, 2) and 2 rows on 3 places (1, 1, 0).
  for (auto [places, batch] : {std::pair{4, 10}, std::pair{3, 2}}) {
    auto m = argmax_mlp("sgd", 0.2f);
    scope reference;
    auto want = reference_losses(m, reference, 6, batch);
    parallel_executor exe(make_cpu_places(places), m.startup, m.main, {}, {2});
    auto got = actor_losses(exe, m, 6, batch);
    for (int s = 0; s < 6; ++s)
      expect_close(got[s], want[s], 1e-5f, std::to_string(places) + " places, batch " +
                                               std::to_string(batch) + ", step " + std::to_string(s));
    expect_same_parameters(exe, reference, m, 1e-4f);
  }
}

TEST(parallel_executor, same_seed_runs_are_bit_identical) {
  auto run_once = [] {
    auto m = argmax_mlp("adam", 0.01f);
    parallel_executor exe(make_cpu_places(3), m.startup, m.main, {}, {2});
    return actor_losses(exe, m, 8, 30);
  };
  EXPECT_EQ(run_once(), run_once());
}

TEST(parallel_executor, per_place_fetch_and_merge) {
  auto m = argmax_mlp("sgd", 0.2f);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, {2});
  auto feed = argmax_feed(m, 6, 3);
  auto per_place = exe.run_per_place(feed, {m.loss, "fc_0.tmp_0"});
  ASSERT_EQ(per_place.size(), 2u);
  ASSERT_EQ(per_place[0].size(), 2u);
  EXPECT_EQ(per_place[1][0].shape(), (shape_t{3, 24}));
  // Merged: the loss is the global-batch mean; batch-shaped tensors are concatenated.
  auto merged = exe.run(feed, {m.loss, "fc_0.tmp_0"});
  EXPECT_EQ(merged[0].numel(), 1);
  EXPECT_EQ(merged[1].shape(), (shape_t{6, 24}));
}

TEST(parallel_executor, evaluation_shares_parameters) {
  auto m = argmax_mlp("sgd", 0.3f);
  parallel_executor train(make_cpu_places(2), m.startup, m.main, {}, {2});
  actor_losses(train, m, 200, 32);
  parallel_executor eval(m.test, train);
  auto feed = argmax_feed(m, 400, 77);
  float accuracy = scalar(eval.run(feed, {m.accuracy})[0]);
  // The same accuracy from the reference executor over place 0's parameters.
  scope copy;
  for (const auto& name : train.place_scope(0).names())
    if (const tensor* t = train.place_scope(0).find(name); t->initialized()) copy.var(name) = t->clone();
  float want = scalar(reference_executor(m.test, copy).run(feed, {m.accuracy})[0]);
  EXPECT_FLOAT_EQ(accuracy, want);
  EXPECT_GT(accuracy, 0.7f);
  EXPECT_TRUE(eval.graph().ops.size() > 0);
  for (const auto& op : eval.graph().ops) EXPECT_NE(op.what, op_handle::kind::all_reduce);
}

TEST(parallel_executor, kernel_error_reaches_the_caller_and_the_executor_stays_usable) {
  for (sync_mode sync : {sync_mode::event, sync_mode::wait}) {
  SCOPED_TRACE(sync == sync_mode::event ? "--sync event" : "--sync wait");
  auto m = argmax_mlp("sgd", 0.2f);
  parallel_executor exe(make_cpu_places(3), m.startup, m.main, {}, {2, sync});
  auto feed = argmax_feed(m, 9, 4);
  auto before = exe.place_scope(1).get("fc_0.w_0").clone();
  auto bad = feed;
  bad[m.label] = feed[m.label].clone();
  bad[m.label].values<std::int64_t>()[8] = 17; // a label on the last place, out of range
  try {
    exe.run(bad, {m.loss});
    FAIL() << "a bad label trained";
  } catch (const error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("(softmax_with_cross_entropy) on cpu:2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("17"), std::string::npos) << msg;
  }
  // Nothing was updated on any place: the optimizer waits on the poisoned all-reduce.
  auto after = exe.place_scope(1).get("fc_0.w_0").values<float>();
  EXPECT_TRUE(std::equal(after.begin(), after.end(), before.values<float>().begin()));
  EXPECT_NO_THROW(exe.run(feed, {m.loss}));
  }
}

TEST(parallel_executor, bad_feeds_are_rejected_before_the_step) {
  auto m = argmax_mlp("sgd", 0.2f);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, {2});
  auto feed = argmax_feed(m, 8, 4);
  auto expect_message = [&](const feed_map& f, const std::string& fragment) {
    try {
      exe.run(f, {m.loss});
      ADD_FAILURE() << "ran with a bad feed";
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_message({{m.image, feed[m.image]}}, "missing feed 'label'");
  auto short_label = feed;
  short_label[m.label] = feed[m.label].slice(0, 5);
  expect_message(short_label, "different batch sizes");
  auto wide = feed;
  wide[m.image] = tensor::zeros(dtype::fp32, {8, 17});
  expect_message(wide, "feed 'image' has shape [8, 17]");
  EXPECT_NO_THROW(exe.run(feed, {m.loss}));
}

TEST(parallel_executor, destroying_mid_run_cancels_promptly) {
  mlp_config c;
  c.input_width = 256;
  c.hidden = {512, 512, 512};
  auto m = build_mlp(c);
  auto b = argmax_batch(512, 256, 10, 1);
  feed_map feed{{m.image, b.image}, {m.label, b.label}};
  auto exe = std::make_unique<parallel_executor>(make_cpu_places(2), m.startup, m.main,
                                                 build_strategy{}, execution_strategy{2});
  exe->run(feed, {m.loss}); // warm: graph built
  // One long step in another thread (16x the warm batch: seconds of GEMMs, so it is still in
  // flight after 20 ms on any machine); the executor is destroyed while it runs. The
  // destructor must cancel the step, wait for run() to return, then stop the actors.
  auto big = argmax_batch(8192, 256, 10, 2);
  feed = {{m.image, big.image}, {m.label, big.label}};
  parallel_executor* running = exe.get();
  std::atomic<bool> started{false};
  std::string outcome;
  std::thread runner([&] {
    started = true;
    try {
      running->run(feed, {m.loss});
      outcome = "finished";
    } catch (const error& e) {
      outcome = e.what();
    }
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto start = std::chrono::steady_clock::now();
  exe.reset();
  auto took = std::chrono::steady_clock::now() - start;
  runner.join();
  EXPECT_NE(outcome.find("being destroyed"), std::string::npos) << outcome;
  EXPECT_LT(took, std::chrono::seconds(5));
}

long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4;
}

TEST(parallel_executor, soak_memory_is_flat) {
  auto m = argmax_mlp("adam", 0.01f);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, {2});
  auto feed = argmax_feed(m, 64, 9);
  for (int s = 0; s < 100; ++s) exe.run(feed, {m.loss});
  long after_warmup = resident_kib();
  for (int s = 0; s < 900; ++s) exe.run(feed, {m.loss});
  long after_soak = resident_kib();
#if !defined(__SANITIZE_ADDRESS__) // ASan's quarantine keeps freed memory resident on purpose
  EXPECT_LT(after_soak - after_warmup, 2048) << "RSS grew from " << after_warmup << " KiB to "
                                             << after_soak << " KiB over 900 steps";
#endif
  // Temporaries are freed at their last use: only persistable variables keep storage.
  for (int p = 0; p < 2; ++p)
    for (const auto& name : exe.place_scope(p).names()) {
      bool persistable = false;
      for (const auto& v : m.main.blocks(0).vars())
        if (v.name() == name) persistable = v.persistable();
      EXPECT_EQ(exe.place_scope(p).find(name)->initialized(), persistable) << name;
    }
}

} // namespace

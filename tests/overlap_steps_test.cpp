// Overlapping steps (execution_strategy::overlap_steps): run() returns once the step's
// fetches and every op touching a feed have run, leaving the step's tail (the optimizer's
// updates after them) running while the next step starts behind it. What must hold: the
// same losses and variables, bit for bit, as whole steps; whatever reads the variables
// waits for the tail; a tail that fails fails the next call and names its step; destroying
// the executor lets the tail end. The tail is held with test_gate (tests/support/test_gate.hpp)
// appended after the optimizer, reading a parameter it updated.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "core/error.hpp"
#include "core/place_list.hpp"
#include "graph/attributes.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/test_gate.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;
using pe::testing::argmax_feed;
using pe::testing::argmax_mlp;
using pe::testing::error_of;
using pe::testing::gate;

execution_strategy overlapping(bool on, bool check_nan_inf = false) {
  execution_strategy e;
  e.overlap_steps = on;
  e.check_nan_inf = check_nan_inf;
  return e;
}

bool same_bits(const tensor& a, const tensor& b) {
  if (!a.initialized() || !b.initialized()) return a.initialized() == b.initialized();
  return a.type() == b.type() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

std::vector<std::string> persistables(const proto::ProgramDesc& main) {
  std::vector<std::string> names;
  for (const auto& v : main.blocks(0).vars())
    if (v.persistable()) names.push_back(v.name());
  return names;
}

/// `m` with ops appended after its optimizer, in its tail: test_gate reading the first
/// fully connected weight (as updated) into "tail_gate_out", then, with `poison`, a scale
/// by infinity of that into "tail_poisoned" (a failure under check_nan_inf).
model_programs with_tail_ops(model_programs m, bool poison) {
  proto::BlockDesc& block = *m.main.mutable_blocks(0);
  const proto::VarDesc* weight = nullptr;
  for (const auto& v : block.vars())
    if (v.persistable() && v.name().find(".w_") != std::string::npos) {
      weight = &v;
      break;
    }
  EXPECT_NE(weight, nullptr);
  const proto::VarDesc weight_desc = *weight;
  auto add_var = [&](const std::string& name, bool persistable) {
    proto::VarDesc& v = *block.add_vars();
    v = weight_desc;
    v.set_name(name);
    v.set_persistable(persistable);
  };
  add_var("tail_gate_out", true); // kept, for the test to read
  proto::OpDesc& g = *block.add_ops();
  g.set_type("test_gate");
  set_input(g, "X", {weight_desc.name()});
  set_output(g, "Out", {"tail_gate_out"});
  if (poison) {
    add_var("tail_poisoned", false);
    proto::OpDesc& s = *block.add_ops();
    s.set_type("scale");
    set_input(s, "X", {"tail_gate_out"});
    set_output(s, "Out", {"tail_poisoned"});
    set_attr(s, "scale", std::numeric_limits<float>::infinity());
    set_attr(s, "bias", 0.f);
    set_attr(s, "bias_after_scale", true);
  }
  return m;
}

/// Trains `m` for `steps` steps on `places` CPU places with overlap on and off, each step
/// its own batch; expects the same losses and, at the end, the same persistables on every
/// place, bit for bit.
void expect_same_training(const model_programs& m, int places, int steps,
                          const std::function<feed_map(int)>& batch) {
  parallel_executor on(make_cpu_places(places), m.startup, m.main, {}, overlapping(true));
  parallel_executor off(make_cpu_places(places), m.startup, m.main, {}, overlapping(false));
  for (int s = 0; s < steps; ++s) {
    const feed_map feeds = batch(s);
    const tensor a = on.run(feeds, {m.loss}).at(0);
    const tensor b = off.run(feeds, {m.loss}).at(0);
    ASSERT_TRUE(same_bits(a, b)) << "step " << s + 1 << ": " << a.values<float>()[0] << " vs "
                                 << b.values<float>()[0];
  }
  for (const std::string& name : persistables(m.main))
    for (int p = 0; p < places; ++p)
      EXPECT_TRUE(same_bits(on.host_value(name, p), off.host_value(name, p))) << name << " on place " << p;
}

TEST(overlap_steps, trains_as_whole_steps_do_bit_for_bit) {
  for (const char* optimizer : {"sgd", "momentum", "adam"})
    for (int places : {1, 2, 3}) {
      SCOPED_TRACE(std::string(optimizer) + " on " + std::to_string(places) + " places");
      const model_programs m = argmax_mlp(optimizer, optimizer == std::string("adam") ? 0.01f : 0.1f);
      expect_same_training(m, places, 25, [&](int s) { return argmax_feed(m, 24, 100 + s); });
    }
}

TEST(overlap_steps, trains_the_cnn_with_batch_norm_as_whole_steps_do) {
  const model_programs m = pe::testing::small_cnn();
  for (int places : {1, 2})
    expect_same_training(m, places, 8, [&](int s) { return pe::testing::small_cnn_feed(m, 40 + s); });
}

TEST(overlap_steps, run_returns_while_the_tail_runs_and_readers_wait_for_it) {
  const model_programs m = with_tail_ops(argmax_mlp("sgd", 0.1f), false);
  const feed_map feeds = argmax_feed(m, 16, 3);
  parallel_executor whole(make_cpu_places(2), m.startup, m.main, {}, overlapping(false));
  const tensor whole_loss = whole.run(feeds, {m.loss}).at(0);
  const tensor whole_weight = whole.host_value("tail_gate_out", 0).clone();
  const std::string weight = "tail_gate_out";

  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, overlapping(true));
  gate().arm(0);
  // The step returns with its tail's gate blocked on place 0: the step did not wait for it.
  auto step = std::async(std::launch::async, [&] { return exe.run(feeds, {m.loss}); });
  ASSERT_EQ(step.wait_for(pe::testing::gate_limit), std::future_status::ready);
  EXPECT_TRUE(same_bits(step.get().at(0), whole_loss));
  ASSERT_TRUE(gate().wait_until_blocked());
  // Reading a variable waits for the tail.
  auto read = std::async(std::launch::async, [&] { return exe.host_value(weight, 0).clone(); });
  EXPECT_EQ(read.wait_for(100ms), std::future_status::timeout);
  gate().release();
  ASSERT_EQ(read.wait_for(pe::testing::gate_limit), std::future_status::ready);
  EXPECT_TRUE(same_bits(read.get(), whole_weight));
  // And the next step starts from the updated parameters.
  EXPECT_TRUE(same_bits(exe.run(feeds, {m.loss}).at(0), whole.run(feeds, {m.loss}).at(0)));
  EXPECT_TRUE(same_bits(exe.host_value(weight, 1), whole.host_value(weight, 1)));
}

TEST(overlap_steps, whole_steps_wait_for_the_tail) {
  const model_programs m = with_tail_ops(argmax_mlp("sgd", 0.1f), false);
  const feed_map feeds = argmax_feed(m, 16, 3);
  parallel_executor exe(make_cpu_places(2), m.startup, m.main, {}, overlapping(false));
  gate().arm(1);
  auto step = std::async(std::launch::async, [&] { exe.run(feeds, {m.loss}); });
  ASSERT_TRUE(gate().wait_until_blocked());
  EXPECT_EQ(step.wait_for(100ms), std::future_status::timeout);
  gate().release();
  ASSERT_EQ(step.wait_for(pe::testing::gate_limit), std::future_status::ready);
  step.get();
}

TEST(overlap_steps, a_failing_tail_fails_the_next_run_naming_its_step) {
  const model_programs m = with_tail_ops(argmax_mlp("sgd", 0.1f), true);
  const feed_map feeds = argmax_feed(m, 16, 3);
  // One place: another place's tail, not held, could fail before the first run returns.
  parallel_executor exe(make_cpu_places(1), m.startup, m.main, {}, overlapping(true, true));
  gate().arm(0);
  std::vector<tensor> first;
  EXPECT_EQ(error_of([&] { first = exe.run(feeds, {m.loss}); }), ""); // its tail is held
  ASSERT_TRUE(gate().wait_until_blocked());
  gate().release();
  const std::string e = error_of([&] { exe.run(feeds, {m.loss}); });
  EXPECT_NE(e.find("step 1 (its work after the fetches)"), std::string::npos) << e;
  EXPECT_NE(e.find("scale"), std::string::npos) << e;
  EXPECT_NE(e.find("tail_poisoned"), std::string::npos) << e;
}

TEST(overlap_steps, finish_reports_the_last_tails_failure_once) {
  const model_programs m = with_tail_ops(argmax_mlp("sgd", 0.1f), true);
  const feed_map feeds = argmax_feed(m, 16, 3);
  parallel_executor exe(make_cpu_places(1), m.startup, m.main, {}, overlapping(true, true));
  gate().arm(0);
  EXPECT_EQ(error_of([&] { exe.run(feeds, {m.loss}); }), "");
  ASSERT_TRUE(gate().wait_until_blocked());
  gate().release();
  const std::string e = error_of([&] { exe.finish(); });
  EXPECT_NE(e.find("tail_poisoned"), std::string::npos) << e;
  EXPECT_EQ(error_of([&] { exe.finish(); }), ""); // nothing left to wait for
}

TEST(overlap_steps, the_test_programs_executor_sees_every_update) {
  const model_programs m = argmax_mlp("momentum", 0.1f);
  auto trained_losses = [&](bool overlap) {
    parallel_executor train(make_cpu_places(2), m.startup, m.main, {}, overlapping(overlap));
    parallel_executor test(m.test, train);
    std::vector<tensor> losses;
    for (int s = 0; s < 12; ++s) {
      train.run(argmax_feed(m, 16, 200 + s), {m.loss});
      losses.push_back(test.run(argmax_feed(m, 16, 500), {m.loss}).at(0));
    }
    return losses;
  };
  const std::vector<tensor> a = trained_losses(true), b = trained_losses(false);
  for (std::size_t s = 0; s < a.size(); ++s) EXPECT_TRUE(same_bits(a[s], b[s])) << "after step " << s + 1;
}

TEST(overlap_steps, destroying_the_executor_lets_its_tail_end) {
  const model_programs m = with_tail_ops(argmax_mlp("sgd", 0.1f), false);
  const feed_map feeds = argmax_feed(m, 16, 3);
  parallel_executor whole(make_cpu_places(2), m.startup, m.main, {}, overlapping(false));
  whole.run(feeds, {m.loss});
  auto train = std::make_unique<parallel_executor>(make_cpu_places(2), m.startup, m.main, build_strategy{},
                                                   overlapping(true));
  parallel_executor test(m.test, *train);
  gate().arm(1);
  train->run(feeds, {m.loss});
  ASSERT_TRUE(gate().wait_until_blocked());
  std::thread releaser([] {
    std::this_thread::sleep_for(50ms);
    gate().release();
  });
  train.reset(); // waits for the tail: its update is the step's
  releaser.join();
  const feed_map probe = argmax_feed(m, 16, 9);
  parallel_executor whole_test(m.test, whole);
  EXPECT_TRUE(same_bits(test.run(probe, {m.loss}).at(0), whole_test.run(probe, {m.loss}).at(0)));
}

} // namespace

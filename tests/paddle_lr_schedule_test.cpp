// An in-graph learning-rate schedule saved by paddlepaddle 2.6.2 (tests/data/paddle_lr_schedule/,
// scripts/make_paddle_lr_schedule_fixture.py): linear_lr_warmup(polynomial_decay(...)) of
// paddle.optimizer.lr, i.e. increment of the persistable INT64 @LR_DECAY_COUNTER@ (-1 in
// Paddle's parameter files), cast, elementwise_min/pow, less_than, two conditional_blocks with
// their sub-blocks, logical_not, cast BOOL -> INT32, select_input and an assign into the
// persistable learning_rate_warmup that sgd reads. (The 20 losses on 1 and 2 places are
// checked with the other fixtures in paddle_training_test.)
// - every step's learning rate is Paddle's, on the reference executor and on 1 and 2 places,
//   and the counter has counted the steps on every place;
// - the counter is saved and resumed with the parameters: pe-actor-run stopped after 10 steps
//   and resumed from its checkpoint gives Paddle's losses of steps 11..20;
// - --check-hazards finds the sub-blocks' reads and writes ordered on 2 places.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "data/npy.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/program_info.hpp"
#include "graph/program_io.hpp"
#include "idx_files.hpp"
#include "support/job.hpp"
#include "support/paddle_fixtures.hpp"
#include "support/process.hpp"

namespace {

using namespace pe;

const std::string dir = std::string(PE_TEST_DATA_DIR) + "/paddle_lr_schedule";
const std::string counter = "@LR_DECAY_COUNTER@";

/// Paddle's values of one .npy file of the fixture.
std::vector<float> paddle_values(const std::string& file) {
  const tensor t = read_npy(dir + "/" + file);
  const auto v = t.values<float>();
  return {v.begin(), v.end()};
}

std::string lr_name() {
  std::string name = pe::testing::slurp(dir + "/lr_name.txt");
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name;
}

feed_map fixture_feeds(const proto::ProgramDesc& main) { return pe::testing::paddle_fixture_feeds(dir, main); }

/// The one element of a one-element tensor as a double.
double scalar(const tensor& t) {
  EXPECT_EQ(t.numel(), 1);
  return t.type() == dtype::int64 ? static_cast<double>(t.data<std::int64_t>()[0]) : t.data<float>()[0];
}

class lr_schedule : public ::testing::TestWithParam<int> {};

TEST_P(lr_schedule, every_steps_learning_rate_and_loss_are_paddles) {
  const int places = GetParam();
  const auto startup = load_program(dir + "/startup.pb");
  const auto main = load_program(dir + "/main.pb");
  ASSERT_EQ(main.blocks_size(), 3) << "the fixture's two branches are sub-blocks";
  const std::string loss = analyze_program(main).loss;
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::cpu(p));
  parallel_executor exe(where, startup, main);
  for (const auto& [var, value] : load_params(dir + "/params", main)) exe.set_persistable(var, value);
  EXPECT_EQ(scalar(exe.host_value(counter, 0)), -1.0) << "Paddle's counter before the first step";
  const feed_map feeds = fixture_feeds(main);
  const auto rates = paddle_values("lr_1p.npy");
  const auto losses = paddle_values("losses_" + std::to_string(places) + "p.npy");
  ASSERT_EQ(rates.size(), 20u);
  for (std::size_t s = 0; s < rates.size(); ++s) {
    const auto fetched = exe.run(feeds, {loss, lr_name()});
    EXPECT_NEAR(scalar(fetched.at(1)), rates[s], 1e-6) << "learning rate of step " << s + 1;
    EXPECT_NEAR(scalar(fetched.at(0)), losses[s], 1e-4 * std::abs(losses[s])) << "loss of step " << s + 1;
  }
  for (int p = 0; p < places; ++p)
    EXPECT_EQ(scalar(exe.host_value(counter, p)), 19.0) << "counter on place " << p;
}

INSTANTIATE_TEST_SUITE_P(places, lr_schedule, ::testing::Values(1, 2),
                         [](const auto& info) { return std::to_string(info.param) + "p"; });

TEST(lr_schedule_reference, the_oracle_runs_the_sub_blocks_too) {
  const auto startup = load_program(dir + "/startup.pb");
  const auto main = load_program(dir + "/main.pb");
  scope vars;
  reference_executor(startup, vars).run({}, {});
  for (const auto& [var, value] : load_params(dir + "/params", main)) vars.var(var) = value.clone();
  reference_executor exe(main, vars);
  const feed_map feeds = fixture_feeds(main);
  const auto rates = paddle_values("lr_1p.npy");
  const auto losses = paddle_values("losses_1p.npy");
  const std::string loss = analyze_program(main).loss;
  for (std::size_t s = 0; s < rates.size(); ++s) {
    const auto fetched = exe.run(feeds, {loss, lr_name(), counter});
    EXPECT_NEAR(scalar(fetched.at(1)), rates[s], 1e-6) << "learning rate of step " << s + 1;
    EXPECT_NEAR(scalar(fetched.at(0)), losses[s], 1e-4 * std::abs(losses[s])) << "loss of step " << s + 1;
    EXPECT_EQ(scalar(fetched.at(2)), static_cast<double>(s)) << "counter after step " << s + 1;
  }
}

// pe-actor-run on the fixture's files.

std::string fixture_flags(const std::string& places) {
  return "--model " + dir + "/main.pb --startup " + dir + "/startup.pb --data npy:" + dir +
         " --batch-size 8 --no-shuffle --places " + places;
}

pe::testing::run_result run(const std::string& args, const pe::testing::temp_dir& scratch) {
  return pe::testing::run_binary(pe::testing::pe_actor_run_binary(), args, scratch.path());
}

TEST(lr_schedule_cli, the_counter_is_saved_and_resumed_with_the_parameters) {
  pe::testing::temp_dir scratch("lr_schedule_resume");
  const std::string ckpt = scratch.file("ckpt");
  const auto paddle = paddle_values("losses_2p.npy");
  auto first = run(fixture_flags("cpu:2") + " --load-params " + dir + "/params --steps 10 --save-params " + ckpt +
                       " --metrics " + scratch.file("first.json"),
                   scratch);
  ASSERT_EQ(first.status, 0) << first.err;
  // The checkpoint holds the counter as Paddle's load_vars reads it: 10 steps from -1.
  const tensor saved = read_param_file(ckpt + "/" + counter, {counter, dtype::int64, {1}});
  EXPECT_EQ(saved.data<std::int64_t>()[0], 9);
  const tensor rate = read_param_file(ckpt + "/" + lr_name(), {lr_name(), dtype::fp32, {1}});
  EXPECT_NEAR(rate.data<float>()[0], paddle_values("lr_1p.npy")[9], 1e-6) << "step 10's learning rate";

  auto resumed = run(fixture_flags("cpu:2") + " --steps 20 --load-params " + ckpt + " --metrics " +
                         scratch.file("resumed.json"),
                     scratch);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const auto before = pe::testing::losses(scratch.file("first.json"));
  const auto after = pe::testing::losses(scratch.file("resumed.json"));
  ASSERT_EQ(before.size(), 10u);
  ASSERT_EQ(after.size(), 10u);
  for (std::size_t s = 0; s < 10; ++s) {
    EXPECT_NEAR(before[s], paddle[s], 1e-4 * std::abs(paddle[s])) << "step " << s + 1;
    EXPECT_NEAR(after[s], paddle[s + 10], 1e-4 * std::abs(paddle[s + 10])) << "step " << s + 11;
  }
}

TEST(lr_schedule_cli, hazard_check_finds_the_sub_blocks_ordered) {
  pe::testing::temp_dir scratch("lr_schedule_hazards");
  auto r = run(fixture_flags("cpu:2") + " --load-params " + dir + "/params --steps 5 --check-hazards", scratch);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

} // namespace

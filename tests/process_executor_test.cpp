// Parallel executors of several "processes" inside one test process, joined by in-memory
// transports: each feeds only its share of the global batch (run_share), starts from rank 0's
// parameters, and trains as one executor over all their places does.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <memory>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "collectives/net/process_group.hpp"
#include "graph/models/mlp.hpp"
#include "support/expect_error.hpp"
#include "support/loopback_transport.hpp"
#include "tests/support/batches.hpp"

namespace {

using namespace pe;
using pe::testing::argmax_feed;
using pe::testing::expect_error;
using pe::testing::rows_of;

model_programs model(const std::string& optimizer, std::uint64_t seed) {
  return pe::testing::argmax_mlp(optimizer, optimizer == "adam" ? 0.01f : 0.1f, seed);
}

struct job_case {
  const char* name;
  int processes;
  int local;
  std::int64_t batch;
  build_strategy::reduce_mode reduce;
  const char* optimizer;
};

/// Test names in ctest: the case's name, not its bytes.
void PrintTo(const job_case& c, std::ostream* os) {
  *os << c.name;
}

class ProcessExecutors : public ::testing::TestWithParam<job_case> {};

TEST_P(ProcessExecutors, TrainAsOneExecutorOverAllTheirPlaces) {
  const auto c = GetParam();
  const auto m = model(c.optimizer, 11);
  // The other processes' startup programs draw other values: rank 0's must win.
  const auto other = model(c.optimizer, 99);
  build_strategy build;
  build.reduce = c.reduce;

  std::vector<place> all;
  for (int p = 0; p < c.processes * c.local; ++p) all.push_back(place::cpu(p));
  parallel_executor one(all, m.startup, m.main, build);

  pe::testing::loopback_network network(c.processes);
  std::vector<std::unique_ptr<process_group>> groups;
  for (int r = 0; r < c.processes; ++r) groups.push_back(std::make_unique<process_group>(network.transport(r)));
  std::vector<std::future<std::unique_ptr<parallel_executor>>> making;
  for (int r = 0; r < c.processes; ++r)
    making.push_back(std::async(std::launch::async, [&, r] {
      std::vector<place> mine(all.begin() + r * c.local, all.begin() + (r + 1) * c.local);
      return std::make_unique<parallel_executor>(mine, r == 0 ? m.startup : other.startup, m.main, build,
                                                 execution_strategy{1, sync_mode::event, groups[r].get()});
    }));
  std::vector<std::unique_ptr<parallel_executor>> processes;
  for (auto& f : making) processes.push_back(f.get());

  for (int step = 0; step < 6; ++step) {
    const auto batch = argmax_feed(m, c.batch, 700 + step);
    const float expected = one.run(batch, {m.loss})[0].values<float>()[0];
    std::vector<std::future<float>> losses;
    for (auto& exe : processes)
      losses.push_back(std::async(std::launch::async, [&] {
        const auto [first, count] = exe->share_of(c.batch);
        return exe->run_share(rows_of(batch, first, count), c.batch, {m.loss})[0].values<float>()[0];
      }));
    std::vector<float> got;
    for (auto& f : losses) got.push_back(f.get());
    for (float loss : got) {
      // Gradients summed per process, then across: fp32 grouping differs from one process.
      EXPECT_NEAR(loss, expected, 1e-5 * std::abs(expected)) << "step " << step;
      EXPECT_EQ(loss, got[0]) << "the processes disagree on the global loss at step " << step;
    }
  }
  // Every process holds the same parameters as the one executor (optimizer state lives on
  // the owners in reduce mode, which are other places here and there).
  for (const auto& v : m.main.blocks(0).vars())
    if (v.persistable() && (v.name().ends_with(".w_0") || v.name().ends_with(".b_0")))
      for (auto& exe : processes) {
        const auto a = exe->place_scope(0).get(v.name()).values<float>();
        const auto b = one.place_scope(0).get(v.name()).values<float>();
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << v.name();
      }
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, ProcessExecutors,
    ::testing::Values(job_case{"TwoByTwo", 2, 2, 64, build_strategy::reduce_mode::all_reduce, "sgd"},
                      job_case{"ThreeByOneUneven", 3, 1, 50, build_strategy::reduce_mode::all_reduce, "sgd"},
                      job_case{"TwoByTwoReduceAdam", 2, 2, 62, build_strategy::reduce_mode::reduce, "adam"},
                      job_case{"ThreeByTwoReduce", 3, 2, 64, build_strategy::reduce_mode::reduce, "sgd"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RunShare, FeedsOfAnotherSizeThanTheShareAreRefused) {
  const auto m = model("sgd", 11);
  parallel_executor exe({place::cpu(0), place::cpu(1)}, m.startup, m.main);
  EXPECT_EQ(exe.share_of(9), (std::pair<std::int64_t, std::int64_t>{0, 9}));
  expect_error([&] { exe.run_share(argmax_feed(m, 8, 1), 9, {m.loss}); },
               {"the feeds hold 8 rows; this process's share of a global batch of 9 is 9"});
}

} // namespace

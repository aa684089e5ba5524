// Steps as CUDA graphs (execution_strategy::cuda_graphs, actors/captured_steps.hpp). On a GPU
// (skipped without one): replayed steps equal eager steps (losses and parameters, 10 steps,
// sgd and adam, gpu:0 and gpu:0x2; the built-in CNN on gpu:0), one graph is made and every
// later step of the same shapes replays it; a step of other shapes runs eagerly and the
// graph comes back after it; a parameter replaced between steps is what the next replay
// reads; a program whose launch code draws on the host (dropout) is not captured, its steps
// run eagerly and equal an executor without graphs, and the reason is given. Everywhere:
// asking for graphs where they cannot run is refused, naming why.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "devices/gpu_runtime.hpp"
#include "graph/builder.hpp"
#include "graph/models/classifier.hpp"
#include "graph/models/cnn.hpp"
#include "graph/models/mlp.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/gpu_places.hpp"
#include "tests/support/expect_error.hpp"

namespace pe {
namespace {

execution_strategy with_graphs() {
  execution_strategy exec;
  exec.cuda_graphs = true;
  return exec;
}

float loss_of(parallel_executor& exe, const model_programs& m, const feed_map& feed) {
  return exe.run(feed, {m.loss})[0].values<float>()[0];
}

/// One step of each executor on `feed`: the eager one's loss onto `want`, the other's onto `got`.
void step_both(parallel_executor& eager, parallel_executor& graphs, const model_programs& m, const feed_map& feed,
               std::vector<float>& want, std::vector<float>& got) {
  want.push_back(loss_of(eager, m, feed));
  got.push_back(loss_of(graphs, m, feed));
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t s = 0; s < got.size(); ++s)
    EXPECT_LE(std::abs(got[s] - want[s]), rel * std::max(std::abs(got[s]), std::abs(want[s])) + 1e-7f)
        << what << " step " << s << ": " << got[s] << " vs " << want[s];
}

void expect_same_parameters(const parallel_executor& a, const parallel_executor& b, const model_programs& m,
                            float rel) {
  for (const auto& v : m.main.blocks(0).vars()) {
    if (!v.persistable()) continue;
    for (int p = 0; p < a.num_places(); ++p) {
      const tensor tx = a.host_value(v.name(), p), ty = b.host_value(v.name(), p);
      const auto x = tx.values<float>(), y = ty.values<float>();
      ASSERT_EQ(x.size(), y.size()) << v.name();
      for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_LE(std::abs(x[i] - y[i]), rel * std::max(std::abs(y[i]), 1e-2f))
            << v.name() << "[" << i << "] place " << p << ": " << x[i] << " (graphs) vs " << y[i];
    }
  }
}

class GpuGraphs : public ::testing::TestWithParam<std::tuple<const char*, int>> {
 protected:
  void SetUp() override {
    const gpu_inventory gpus = query_gpus();
    if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.problem;
  }
};

TEST_P(GpuGraphs, ReplayedStepsEqualEagerSteps) {
  const auto [optimizer, places] = GetParam();
  const auto m = testing::argmax_mlp(optimizer, std::string(optimizer) == "adam" ? 0.01f : 0.1f);
  parallel_executor eager(testing::logical_gpu_places(places), m.startup, m.main);
  parallel_executor graphs(testing::logical_gpu_places(places), m.startup, m.main, {}, with_graphs());
  std::vector<float> want, got;
  for (int s = 0; s < 10; ++s) {
    const feed_map feed = testing::argmax_feed(m, 24, 700 + static_cast<std::uint64_t>(s));
    step_both(eager, graphs, m, feed, want, got);
  }
  expect_close(got, want, 1e-6f, "graph vs eager");
  expect_same_parameters(graphs, eager, m, 1e-6f);
  const auto c = graphs.cuda_graph_statistics();
  EXPECT_EQ(c.captures, 1u);
  EXPECT_EQ(c.replays, 8u) << "steps 3 to 10 (the third is captured and replayed once)";
  EXPECT_GT(c.operations, 10u);
  EXPECT_EQ(c.off_reason, "");
  EXPECT_EQ(eager.cuda_graph_statistics().replays, 0u);
}

INSTANTIATE_TEST_SUITE_P(OptimizersAndPlaces, GpuGraphs,
                         ::testing::Combine(::testing::Values("sgd", "adam"), ::testing::Values(1, 2)));

class GpuGraphsOnce : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu_inventory gpus = query_gpus();
    if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.problem;
  }
};

TEST_F(GpuGraphsOnce, AStepOfOtherShapesRunsEagerlyAndTheGraphComesBack) {
  const auto m = testing::argmax_mlp("sgd", 0.1f);
  parallel_executor eager(testing::logical_gpu_places(2), m.startup, m.main);
  parallel_executor graphs(testing::logical_gpu_places(2), m.startup, m.main, {}, with_graphs());
  std::vector<float> want, got;
  for (int s = 0; s < 12; ++s) {
    const std::int64_t rows = s == 6 ? 10 : 24; // an epoch's short last batch
    const feed_map feed = testing::argmax_feed(m, rows, 300 + static_cast<std::uint64_t>(s));
    step_both(eager, graphs, m, feed, want, got);
  }
  expect_close(got, want, 1e-6f, "graph vs eager");
  const auto c = graphs.cuda_graph_statistics();
  EXPECT_EQ(c.captures, 1u) << "the short batch ran eagerly and the graph was kept";
  EXPECT_EQ(c.replays, 9u) << "steps 3-6 and 8-12";
}

TEST_F(GpuGraphsOnce, AParameterReplacedBetweenStepsIsWhatTheNextReplayReads) {
  const auto m = testing::argmax_mlp("sgd", 0.1f);
  parallel_executor eager(testing::logical_gpu_places(2), m.startup, m.main);
  parallel_executor graphs(testing::logical_gpu_places(2), m.startup, m.main, {}, with_graphs());
  std::string weight;
  for (const auto& v : m.main.blocks(0).vars())
    if (v.is_parameter() && weight.empty()) weight = v.name();
  std::vector<float> want, got;
  for (int s = 0; s < 8; ++s) {
    if (s == 5) {
      tensor w = eager.host_value(weight, 0);
      for (float& x : w.values<float>()) x *= 0.5f;
      eager.set_persistable(weight, w);
      graphs.set_persistable(weight, w);
    }
    const feed_map feed = testing::argmax_feed(m, 24, 900 + static_cast<std::uint64_t>(s));
    step_both(eager, graphs, m, feed, want, got);
  }
  expect_close(got, want, 1e-6f, "graph vs eager");
  const auto c = graphs.cuda_graph_statistics();
  EXPECT_EQ(c.captures, 1u) << c.replays << " replays, " << c.dropped << " dropped";
  EXPECT_EQ(c.replays, 6u) << "steps 3-8: the replaced parameter keeps its buffer";
  expect_same_parameters(graphs, eager, m, 1e-6f);
}

TEST_F(GpuGraphsOnce, TheBuiltInCnnReplaysAsItRunsEagerly) {
  const model_programs m = testing::small_cnn();
  const auto feed = [&](std::uint64_t seed) { return testing::small_cnn_feed(m, seed); };
  parallel_executor eager(testing::logical_gpu_places(1), m.startup, m.main);
  parallel_executor graphs(testing::logical_gpu_places(1), m.startup, m.main, {}, with_graphs());
  std::vector<float> want, got;
  for (int s = 0; s < 10; ++s) {
    step_both(eager, graphs, m, feed(40 + static_cast<std::uint64_t>(s)), want, got);
  }
  expect_close(got, want, 1e-5f, "cnn graph vs eager");
  EXPECT_EQ(graphs.cuda_graph_statistics().replays, 8u) << graphs.cuda_graph_statistics().off_reason;
}

/// The MLP with dropout after its first layer: dropout draws its mask on the host each step.
model_programs mlp_with_dropout() {
  model_programs m;
  program_builder b(m.main, m.startup, 11);
  m.image = b.data("image", {-1, 16}, dtype::fp32);
  m.label = b.data("label", {-1, 1}, dtype::int64);
  const std::string h = b.fc(m.image, 32, "relu");
  const std::string dropped = b.unique_name("dropout");
  b.append_op("dropout", {{"X", {h}}}, {{"Out", {dropped}}, {"Mask", {dropped + ".mask"}}},
              {{"dropout_prob", 0.25f}, {"is_test", false}, {"seed", std::int32_t{7}}, {"fix_seed", true},
               {"dropout_implementation", std::string("upscale_in_train")}});
  finish_classifier(b, m, b.fc(dropped, 4, ""), "sgd", 0.1f, 0.9f);
  return m;
}

TEST_F(GpuGraphsOnce, AProgramThatDrawsOnTheHostRunsEagerlyAndSaysWhy) {
  const auto m = mlp_with_dropout();
  parallel_executor eager(testing::logical_gpu_places(2), m.startup, m.main);
  parallel_executor graphs(testing::logical_gpu_places(2), m.startup, m.main, {}, with_graphs());
  std::vector<float> want, got;
  for (int s = 0; s < 6; ++s) {
    const feed_map feed = testing::argmax_feed(m, 24, 60 + static_cast<std::uint64_t>(s));
    step_both(eager, graphs, m, feed, want, got);
  }
  expect_close(got, want, 1e-6f, "refused capture vs eager");
  const auto c = graphs.cuda_graph_statistics();
  EXPECT_EQ(c.replays, 0u);
  EXPECT_NE(c.off_reason.find("dropout"), std::string::npos) << c.off_reason;
  EXPECT_NE(c.off_reason.find("cannot run in a captured step"), std::string::npos) << c.off_reason;
}

// Runs everywhere: where graphs cannot run, asking for them is an error naming why.
TEST(CudaGraphsRefused, OnCpuPlaces) {
  const auto m = testing::argmax_mlp("sgd", 0.1f);
  testing::expect_error([&] { parallel_executor exe({place::cpu(0)}, m.startup, m.main, {}, with_graphs()); },
                        {"CUDA graphs (--cuda-graphs) cannot run here: cpu:0 is not a GPU place"});
}

TEST(CudaGraphsRefused, WithTheHostWaitingBetweenKernels) {
  const auto m = testing::argmax_mlp("sgd", 0.1f);
  execution_strategy exec = with_graphs();
  exec.sync = sync_mode::wait;
  testing::expect_error([&] { parallel_executor exe({place::cpu(0)}, m.startup, m.main, {}, exec); },
                        {"cannot run here: --sync wait makes the host wait between kernels"});
}

} // namespace
} // namespace pe

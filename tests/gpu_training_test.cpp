// Training on GPU places (skipped without a GPU): 10 steps of the MLP on gpu:0 equal the
// CPU reference executor within 1e-4 (losses and parameters); gpu:0x2 and gpu:0x4 (logical
// places sharing GPU 0: the engine's own reduction) equal gpu:0 within 1e-5; reduce mode
// and Adam too; fetched values come back to the host; --check-nan-inf finds a NaN with its
// kernel on the place's stream, naming op, place and variable; the hazard checker passes on the
// traces of GPU steps, whose spans are the device's times, and those traces show the
// compute, communication and copy streams overlapping. The built-in CNN (cuDNN convolutions
// with FMA math, batch norm, pooling, momentum) on gpu:0 equals the CPU reference within
// 1e-4 over 10 steps; on gpu:0x2 with --sync-batch-norm it equals gpu:0 within 1e-4.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/hazard_check.hpp"
#include "actors/parallel_executor.hpp"
#include "actors/trace.hpp"
#include "devices/gpu_runtime.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/models/cnn.hpp"
#include "graph/models/mlp.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/gpu_places.hpp"
#include "tests/support/expect_error.hpp"

namespace pe {
namespace {

model_programs model(const std::string& optimizer) {
  return testing::argmax_mlp(optimizer, optimizer == "adam" ? 0.01f : 0.1f);
}

feed_map batch_feed(const model_programs& m, std::uint64_t seed) {
  return testing::argmax_feed(m, 24, seed);
}

std::vector<float> reference_losses(const model_programs& m, scope& vars) {
  reference_executor(m.startup, vars).run({}, {});
  reference_executor main(m.main, vars);
  std::vector<float> losses;
  for (int s = 0; s < 10; ++s) losses.push_back(main.run(batch_feed(m, 500 + s), {m.loss})[0].values<float>()[0]);
  return losses;
}

std::vector<float> gpu_losses(parallel_executor& exe, const model_programs& m) {
  std::vector<float> losses;
  for (int s = 0; s < 10; ++s) losses.push_back(exe.run(batch_feed(m, 500 + s), {m.loss})[0].values<float>()[0]);
  return losses;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t s = 0; s < got.size(); ++s)
    EXPECT_LE(std::abs(got[s] - want[s]), rel * std::max(std::abs(got[s]), std::abs(want[s])) + 1e-7f)
        << what << " step " << s << ": " << got[s] << " vs " << want[s];
}

class GpuTraining : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const gpu_inventory gpus = query_gpus();
    if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.problem;
  }
};

TEST_P(GpuTraining, Gpu0EqualsTheCpuReference) {
  const auto m = model(GetParam());
  scope reference;
  const auto want = reference_losses(m, reference);
  parallel_executor exe(testing::logical_gpu_places(1), m.startup, m.main);
  expect_close(gpu_losses(exe, m), want, 1e-4f, "gpu:0");
  for (const auto& v : m.main.blocks(0).vars()) {
    if (!v.is_parameter()) continue;
    const tensor got = exe.host_value(v.name(), 0);
    const auto a = got.values<float>(), b = reference.get(v.name()).values<float>();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_LE(std::abs(a[i] - b[i]), 1e-4f * std::max(std::abs(b[i]), 1e-2f)) << v.name() << "[" << i << "]";
  }
}

TEST_P(GpuTraining, LogicalPlacesOnOneGpuEqualGpu0) {
  const auto m = model(GetParam());
  parallel_executor one(testing::logical_gpu_places(1), m.startup, m.main);
  const auto want = gpu_losses(one, m);
  for (int n : {2, 4}) {
    parallel_executor exe(testing::logical_gpu_places(n), m.startup, m.main);
    expect_close(gpu_losses(exe, m), want, 1e-5f, "gpu:0x" + std::to_string(n));
    build_strategy reduce;
    reduce.reduce = build_strategy::reduce_mode::reduce;
    parallel_executor owners(testing::logical_gpu_places(n), m.startup, m.main, reduce);
    expect_close(gpu_losses(owners, m), want, 1e-5f, "gpu:0x" + std::to_string(n) + " reduce mode");
  }
}

TEST_P(GpuTraining, TheHazardCheckerPassesOnGpuTraces) {
  const auto m = model(GetParam());
  parallel_executor exe(testing::logical_gpu_places(2), m.startup, m.main);
  trace_recorder recorder;
  exe.trace(&recorder);
  gpu_losses(exe, m);
  exe.trace(nullptr);
  EXPECT_EQ(recorder.events().size(), 10 * exe.graph().ops.size());
  for (const auto& v : check_hazards({exe.graph(), exe.program(), exe.place_names()}, recorder.events()))
    ADD_FAILURE() << v.message;
}

TEST_P(GpuTraining, CheckNanInfNamesTheOpPlaceAndVariableAndTheNextStepTrains) {
  const auto m = model(GetParam());
  execution_strategy exec;
  exec.check_nan_inf = true;
  parallel_executor exe(testing::logical_gpu_places(2), m.startup, m.main, {}, exec);
  parallel_executor unchecked(testing::logical_gpu_places(2), m.startup, m.main);
  // Checked and unchecked steps agree while everything is finite.
  std::vector<float> checked_losses, unchecked_losses;
  for (int s = 0; s < 3; ++s) {
    checked_losses.push_back(exe.run(batch_feed(m, 40 + s), {m.loss})[0].values<float>()[0]);
    unchecked_losses.push_back(unchecked.run(batch_feed(m, 40 + s), {m.loss})[0].values<float>()[0]);
  }
  expect_close(checked_losses, unchecked_losses, 1e-6f, "checked against unchecked");
  feed_map bad = batch_feed(m, 50);
  bad[m.image] = bad.at(m.image).clone();
  bad[m.image].values<float>()[20 * 16 + 3] = std::numeric_limits<float>::quiet_NaN(); // place 1's rows
  testing::expect_error([&] { exe.run(bad, {m.loss}); },
                        {"op #0 (mul) on gpu:1@dev0", "output variable 'fc_0.tmp_0'", "nan at element",
                         "(--check-nan-inf)"});
  EXPECT_NO_THROW(exe.run(batch_feed(m, 51), {m.loss}));
}

TEST(GpuTrace, ComputeCommunicationAndCopyOverlapOnTheDevice) {
  const gpu_inventory gpus = query_gpus();
  if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.problem;
  // Kernels long enough to be seen side by side: the spans are the device's times (CUDA
  // events around each op's launches), so a gradient's all-reduce on the communication
  // stream runs while the compute stream goes on with the layers below, and the loss's
  // fetch on the copy stream while the backward pass runs.
  mlp_config c;
  c.input_width = 512;
  c.hidden = {1024, 1024, 1024};
  c.classes = 16;
  c.seed = 3;
  const model_programs m = build_mlp(c);
  parallel_executor exe(testing::logical_gpu_places(2), m.startup, m.main);
  trace_recorder recorder(3, 10); // after the warm-up steps
  exe.trace(&recorder);
  for (int s = 0; s < 10; ++s) {
    auto b = testing::argmax_batch(256, c.input_width, c.classes, 900 + static_cast<std::uint64_t>(s));
    exe.run({{m.image, b.image}, {m.label, b.label}}, {m.loss});
  }
  exe.trace(nullptr);
  const auto events = recorder.events();
  ASSERT_EQ(events.size(), 8 * exe.graph().ops.size());
  const auto& ops = exe.graph().ops;
  auto kind_of = [&](const trace_event& e) { return ops[static_cast<std::size_t>(e.op)].what; };
  auto on_place0 = [&](const trace_event& e) { return ops[static_cast<std::size_t>(e.op)].place == 0; };
  std::size_t with_collective = 0, with_fetch = 0;
  for (const trace_event& e : events) {
    if (kind_of(e) != op_handle::kind::computation || !on_place0(e)) continue;
    for (const trace_event& other : events) {
      if (other.step != e.step || other.start_ns >= e.end_ns || e.start_ns >= other.end_ns) continue;
      if (is_collective(kind_of(other))) ++with_collective;
      if (kind_of(other) == op_handle::kind::fetch && on_place0(other)) ++with_fetch;
    }
  }
  EXPECT_GT(with_collective, 0u) << "no computation on gpu:0 overlapped a collective";
  EXPECT_GT(with_fetch, 0u) << "no computation on gpu:0 overlapped the loss's fetch";
  for (const auto& v : check_hazards({exe.graph(), exe.program(), exe.place_names()}, events))
    ADD_FAILURE() << v.message;
}

TEST(GpuCnn, TheBuiltInCnnOnGpu0EqualsTheCpuReference) {
  const gpu_inventory gpus = query_gpus();
  if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.problem;
  const model_programs m = testing::small_cnn(); // small: the reference executor is quick
  const auto feed = [&](std::uint64_t seed) { return testing::small_cnn_feed(m, seed); };
  scope reference;
  reference_executor(m.startup, reference).run({}, {});
  reference_executor cpu(m.main, reference);
  parallel_executor exe(testing::logical_gpu_places(1), m.startup, m.main);
  std::vector<float> want, got;
  for (int s = 0; s < 10; ++s) {
    want.push_back(cpu.run(feed(700 + s), {m.loss})[0].values<float>()[0]);
    got.push_back(exe.run(feed(700 + s), {m.loss})[0].values<float>()[0]);
  }
  expect_close(got, want, 1e-4f, "cnn on gpu:0");
  EXPECT_LT(want.back(), want.front()) << "the reference did not train";
}

TEST(GpuCnn, SyncBatchNormOnTwoPlacesEqualsOnePlace) {
  // --sync-batch-norm: the batch statistics over both places' rows (an all-reduce of the
  // per-channel sums, then of the grad's), so gpu:0x2 normalises as gpu:0 does with the
  // whole batch; also when its steps are replayed as a CUDA graph.
  const gpu_inventory gpus = query_gpus();
  if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.problem;
  const model_programs m = testing::small_cnn();
  const auto feed = [&](std::uint64_t seed) { return testing::small_cnn_feed(m, seed); };
  build_strategy sync;
  sync.sync_batch_norm = true;
  execution_strategy graphs;
  graphs.cuda_graphs = true;
  parallel_executor one(testing::logical_gpu_places(1), m.startup, m.main);
  parallel_executor two(testing::logical_gpu_places(2), m.startup, m.main, sync);
  parallel_executor captured(testing::logical_gpu_places(2), m.startup, m.main, sync, graphs);
  std::vector<float> want, got, replayed;
  for (int s = 0; s < 10; ++s) {
    want.push_back(one.run(feed(700 + s), {m.loss})[0].values<float>()[0]);
    got.push_back(two.run(feed(700 + s), {m.loss})[0].values<float>()[0]);
    replayed.push_back(captured.run(feed(700 + s), {m.loss})[0].values<float>()[0]);
  }
  expect_close(got, want, 1e-4f, "cnn on gpu:0x2 with sync batch norm");
  expect_close(replayed, got, 1e-6f, "the same with CUDA graphs");
  EXPECT_LT(want.back(), want.front()) << "gpu:0 did not train";
}

INSTANTIATE_TEST_SUITE_P(Optimizers, GpuTraining, ::testing::Values("sgd", "adam"));

} // namespace
} // namespace pe

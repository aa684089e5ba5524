// Batch statistics across places (build_strategy::sync_batch_norm, Paddle's sync_batch_norm op):
// the rewrite of block 0 (graph/sync_batch_norm.hpp), the SSA graph's all-reduces of the
// statistics, and training: N places, also an uneven split and reduce mode, equal one place
// with the whole batch within float noise, where per-place statistics do not.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "core/place.hpp"
#include "core/place_list.hpp"
#include "graph/attributes.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/ssa_graph.hpp"
#include "graph/sync_batch_norm.hpp"
#include "graph/validate.hpp"
#include "tests/support/batches.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/paddle_fixtures.hpp"

namespace pe {
namespace {

std::map<std::string, int> op_counts(const proto::ProgramDesc& p) {
  std::map<std::string, int> n;
  for (const auto& op : p.blocks(0).ops()) ++n[op.type()];
  return n;
}

/// The first 12 rows of each of small_cnn's 16-row feeds.
feed_map twelve_rows(const model_programs& m, std::uint64_t seed) {
  feed_map feed = testing::small_cnn_feed(m, seed);
  for (auto& [name, t] : feed) {
    shape_t dims = t.shape();
    const std::size_t bytes = t.bytes() / static_cast<std::size_t>(dims[0]) * 12;
    dims[0] = 12;
    tensor rows(t.type(), dims);
    std::memcpy(rows.raw(), t.raw(), bytes);
    t = std::move(rows);
  }
  return feed;
}

/// 10 steps of small_cnn's loss on `places`, on the same 12 rows (3 places: 4 each; 5: uneven).
std::vector<float> cnn_losses(int places, const build_strategy& build) {
  const model_programs m = testing::small_cnn();
  parallel_executor exe(make_cpu_places(places), m.startup, m.main, build);
  std::vector<float> losses;
  for (int s = 0; s < 10; ++s) {
    losses.push_back(exe.run(twelve_rows(m, 900), {m.loss})[0].values<float>()[0]);
  }
  return losses;
}

float largest_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0;
  for (std::size_t s = 0; s < a.size(); ++s)
    worst = std::max(worst, std::abs(a[s] - b[s]) / std::max(std::abs(a[s]), std::abs(b[s])));
  return worst;
}

build_strategy synced() {
  build_strategy b;
  b.sync_batch_norm = true;
  return b;
}

TEST(SyncBatchNormLowering, TrainingBatchNormsBecomeLocalSumsAnAllReduceAndTheNormalisation) {
  const model_programs m = testing::small_cnn();
  const auto before = op_counts(m.main);
  ASSERT_EQ(before.at("batch_norm"), 2);
  ASSERT_EQ(before.at("batch_norm_grad"), 2);
  const proto::ProgramDesc lowered = lower_sync_batch_norm(m.main, true);
  auto after = op_counts(lowered);
  EXPECT_EQ(after.count("batch_norm"), 0u);
  EXPECT_EQ(after.count("batch_norm_grad"), 0u);
  for (const char* type : {"sync_batch_norm_stats", "sync_batch_norm_apply", "sync_batch_norm_grad_stats",
                           "sync_batch_norm_grad_apply"})
    EXPECT_EQ(after[type], 2) << type;
  EXPECT_EQ(after["c_allreduce_sum"], 4);
  // The lowered program is valid; each statistics variable is FP32 [2C + 1].
  const var_table vars = validate_program(lowered);
  int stats = 0;
  for (const auto& [name, info] : vars)
    if (name.find("@SYNC_BN_STATS") != std::string::npos) {
      ++stats;
      ASSERT_EQ(info.dims.size(), 1u) << name;
      EXPECT_TRUE(info.dims[0] == 2 * 4 + 1 || info.dims[0] == 2 * 8 + 1) << name << " " << to_string(info.dims);
    }
  EXPECT_EQ(stats, 4);
  // Only the op writing Scale@GRAD and Bias@GRAD names them as gradients to combine.
  for (const auto& op : lowered.blocks(0).ops())
    EXPECT_EQ(find_attr(op, "op_role_var") != nullptr && op.type().starts_with("sync_batch_norm"),
              op.type() == "sync_batch_norm_grad_stats")
        << op.type();
}

TEST(SyncBatchNormLowering, InferenceAndUnconvertedProgramsStayAsTheyAre) {
  const model_programs m = testing::small_cnn();
  // Off, and no sync_batch_norm op: the same program.
  EXPECT_EQ(lower_sync_batch_norm(m.main, false).SerializeAsString(), m.main.SerializeAsString());
  // The test program normalises with the running statistics: nothing to share.
  EXPECT_EQ(op_counts(lower_sync_batch_norm(m.test, true)), op_counts(m.test));
  // Paddle's own sync_batch_norm in inference mode becomes batch_norm.
  proto::ProgramDesc paddle_test = m.test;
  for (auto& op : *paddle_test.mutable_blocks(0)->mutable_ops())
    if (op.type() == "batch_norm") op.set_type("sync_batch_norm");
  const auto counts = op_counts(lower_sync_batch_norm(paddle_test, false));
  EXPECT_EQ(counts.count("sync_batch_norm"), 0u);
  EXPECT_EQ(counts.at("batch_norm"), 2);
}

TEST(SyncBatchNormLowering, AScaleOfUnknownChannelsIsNamed) {
  model_programs m = testing::small_cnn();
  std::string scale;
  for (const auto& op : m.main.blocks(0).ops())
    if (op.type() == "batch_norm") scale = input_args(op, "Scale").at(0);
  for (auto& v : *m.main.mutable_blocks(0)->mutable_vars())
    if (v.name() == scale) v.mutable_type()->mutable_lod_tensor()->mutable_tensor()->set_dims(0, -1);
  testing::expect_error([&] { lower_sync_batch_norm(m.main, true); },
                        {"op #", "Scale '" + scale + "' must be a declared variable of known dims [C]"});
}

TEST(SyncBatchNormGraph, TheStatisticsAreAllReducedInGraphOrderWithTheGradients) {
  const model_programs m = testing::small_cnn();
  const proto::ProgramDesc lowered = lower_sync_batch_norm(m.main, true);
  const ssa_graph two = build_ssa_graph(lowered, 2, {}, {m.loss});
  int statistics = 0, computations = 0;
  for (const auto& op : two.ops) {
    if (op.what == op_handle::kind::all_reduce && op.vars.at(0).ends_with("@SYNC_BN_STATS")) ++statistics;
    if (op.what == op_handle::kind::computation &&
        lowered.blocks(0).ops(op.op_index).type() == "c_allreduce_sum")
      ++computations;
  }
  EXPECT_EQ(statistics, 4);
  EXPECT_EQ(computations, 0);
  // One place alone: each is a computation (whose kernel has nothing to do).
  const ssa_graph one = build_ssa_graph(lowered, 1, {}, {m.loss});
  int alone = 0;
  for (const auto& op : one.ops)
    if (op.what == op_handle::kind::computation && lowered.blocks(0).ops(op.op_index).type() == "c_allreduce_sum")
      ++alone;
  EXPECT_EQ(alone, 4);
}

TEST(SyncBatchNormTraining, OnePlaceEqualsPlainBatchNorm) {
  EXPECT_LE(largest_relative_difference(cnn_losses(1, synced()), cnn_losses(1, {})), 1e-5f);
}

TEST(SyncBatchNormTraining, SeveralPlacesEqualOnePlaceWithTheWholeBatch) {
  const std::vector<float> one = cnn_losses(1, {});
  EXPECT_LT(one.back(), one.front()) << "one place did not train";
  for (int places : {2, 3, 5}) // 5: 12 rows split 3, 3, 2, 2, 2
    EXPECT_LE(largest_relative_difference(cnn_losses(places, synced()), one), 1e-5f) << places << " places";
  // Without it each place normalises its own rows: not the same model.
  EXPECT_GT(largest_relative_difference(cnn_losses(2, {}), one), 1e-4f);
}

TEST(SyncBatchNormTraining, ReduceModeToo) {
  build_strategy b = synced();
  b.reduce = build_strategy::reduce_mode::reduce;
  EXPECT_LE(largest_relative_difference(cnn_losses(2, b), cnn_losses(1, {})), 1e-5f);
}

TEST(SyncBatchNormTraining, PaddlesOwnSyncBatchNormOpsShareTheirStatistics) {
  // A program saved with nn.SyncBatchNorm holds sync_batch_norm ops: shared with no flag;
  // the reference executor runs them as batch_norm (one place).
  model_programs m = testing::small_cnn();
  for (auto& op : *m.main.mutable_blocks(0)->mutable_ops())
    if (op.type().starts_with("batch_norm")) op.set_type("sync_" + op.type());
  const std::vector<float> one = cnn_losses(1, {});
  parallel_executor two(make_cpu_places(2), m.startup, m.main);
  scope vars;
  reference_executor(m.startup, vars).run({}, {});
  reference_executor reference(m.main, vars);
  std::vector<float> got, ref;
  for (int s = 0; s < 10; ++s) {
    const feed_map feed = twelve_rows(m, 900);
    got.push_back(two.run(feed, {m.loss})[0].values<float>()[0]);
    ref.push_back(reference.run(feed, {m.loss})[0].values<float>()[0]);
  }
  EXPECT_LE(largest_relative_difference(got, one), 1e-5f);
  EXPECT_LE(largest_relative_difference(ref, one), 1e-5f);
}

TEST(SyncBatchNormPaddleProgram, NnSyncBatchNormAsPaddleSavedItTrainsAsPaddleOnOneAndOnSeveralPlaces) {
  // tests/data/paddle_sync_bn (scripts/make_paddle_sync_bn_fixture.py): Paddle 2.6.2's own
  // sync_batch_norm ops (no ReserveSpace, an empty MomentumTensor slot); Paddle's losses on one
  // place, which is what 2 and 4 synchronised places must give too.
  const std::string dir = testing::paddle_training_fixture("sync_bn");
  const std::vector<float> paddle = testing::paddles_losses(dir, 1);
  ASSERT_EQ(paddle.size(), 20u);
  EXPECT_LE(largest_relative_difference(testing::paddle_fixture_losses(dir, make_cpu_places(1), 20), paddle), 1e-5f);
  for (int places : {2, 4})
    EXPECT_LE(largest_relative_difference(testing::paddle_fixture_losses(dir, make_cpu_places(places), 20), paddle), 1e-4f)
        << places << " places";
}

} // namespace
} // namespace pe

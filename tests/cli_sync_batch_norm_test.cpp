// pe-actor-run --sync-batch-norm: shown in --help; the CNN on cpu:2 and cpu:3 then trains as
// on cpu:1 (the printed losses agree), where without it the places normalise their own rows;
// refused with --executor reference, naming the flag.
#include <cmath>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::run_binary;
using testing::temp_dir;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The summary's losses: "trained 4 steps on ...: loss 3.1 -> 2.5, ..." -> {3.1, 2.5}.
std::pair<double, double> summary_losses(const std::string& out) {
  const auto at = out.find(": loss ", out.find("trained 4 steps"));
  const auto arrow = out.find(" -> ", at);
  if (at == std::string::npos || arrow == std::string::npos) {
    ADD_FAILURE() << "no summary in: " << out;
    return {0, 0};
  }
  return {std::stod(out.substr(at + 7)), std::stod(out.substr(arrow + 4))};
}

/// Whether both losses agree to the printed digits' float noise.
bool same_losses(std::pair<double, double> a, std::pair<double, double> b) {
  const auto near = [](double x, double y) { return std::abs(x - y) <= 1e-5 * std::abs(y); };
  return near(a.first, b.first) && near(a.second, b.second);
}

std::pair<double, double> train(const temp_dir& dir, const std::string& flags) {
  const auto r = run_binary(testing::pe_actor_run_binary(),
                            "--model cnn --batch-size 24 --lr 0.001 --steps 4 --seed 3 " + flags, dir.path());
  EXPECT_EQ(r.status, 0) << flags << ": " << r.err;
  return summary_losses(r.out);
}

TEST(CliSyncBatchNorm, HelpDescribesTheFlag) {
  temp_dir dir("cli_sync_bn_help");
  const auto r = run_binary(testing::pe_actor_run_binary(), "--help", dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "--sync-batch-norm")) << r.out;
  EXPECT_TRUE(has(r.out, "Paddle's BuildStrategy.sync_batch_norm")) << r.out;
}

TEST(CliSyncBatchNorm, SeveralPlacesTrainAsOnePlace) {
  temp_dir dir("cli_sync_bn_train");
  const auto one = train(dir, "--places cpu:1");
  // The statistics are the whole batch's: the losses agree within float noise.
  EXPECT_TRUE(same_losses(train(dir, "--places cpu:2 --sync-batch-norm"), one));
  EXPECT_TRUE(same_losses(train(dir, "--places cpu:3 --sync-batch-norm"), one));
  EXPECT_FALSE(same_losses(train(dir, "--places cpu:2"), one)) << "per-place statistics gave one place's losses";
}

TEST(CliSyncBatchNorm, RefusedWithTheReferenceExecutor) {
  temp_dir dir("cli_sync_bn_reference");
  const auto r = run_binary(testing::pe_actor_run_binary(), "--sync-batch-norm --executor reference --steps 2",
                            dir.path());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--cuda-graphs, --sync-batch-norm, --pin-places, --actor-per-op and --no-overlap-steps configure the actor executor")) << r.err;
}

} // namespace
} // namespace pe

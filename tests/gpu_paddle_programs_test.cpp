// Programs Paddle saved, trained on GPU places (skipped without a GPU): the Paddle training
// fixtures of paddle_training_test (tests/data/paddle_<name>/: an MLP with cross_entropy2
// and accuracy, one with dropout and L2 decay, LeNet with batch_norm and momentum, a small
// ResNet, an embedding bag of INT64 ids, an in-graph learning-rate schedule of
// conditional_blocks and select_input), from Paddle's initial parameters, on gpu:0 and on
// gpu:0x2 (two logical places on GPU 0, against Paddle's own 2-place run). The first 10
// steps equal Paddle's losses within 1e-4 relative, all 20 within 1e-3 (cuBLAS and cuDNN sum
// in other orders than Paddle's CPU kernels; the difference grows with training). The largest
// difference is printed, so that a run on a GPU says how close it came.
// tests/host_gpu_paddle_programs_test.cpp runs the same on a GPU place simulated on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "devices/gpu_runtime.hpp"
#include "tests/support/paddle_fixtures.hpp"

namespace pe {
namespace {

class GpuPaddlePrograms : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  void SetUp() override {
    const gpu_inventory gpus = query_gpus();
    if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.problem;
  }
};

TEST_P(GpuPaddlePrograms, TrainAsPaddleDid) {
  const auto& [name, places] = GetParam();
  const std::string dir = testing::paddle_training_fixture(name);
  const std::vector<float> paddle = testing::paddles_losses(dir, places);
  ASSERT_EQ(paddle.size(), 20u);
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::gpu(p, 0));
  const std::vector<float> ours = testing::paddle_fixture_losses(dir, where, 20);
  ASSERT_EQ(ours.size(), paddle.size());
  double worst_10 = 0, worst_20 = 0;
  for (std::size_t s = 0; s < ours.size(); ++s) {
    const double rel = std::abs(ours[s] - paddle[s]) / std::max(std::abs(paddle[s]), 1e-6f);
    (s < 10 ? worst_10 : worst_20) = std::max(s < 10 ? worst_10 : worst_20, rel);
    EXPECT_LE(rel, s < 10 ? 1e-4 : 1e-3) << name << " on gpu:0x" << places << ", step " << s + 1 << ": "
                                         << ours[s] << " vs Paddle's " << paddle[s];
  }
  std::cout << name << " on gpu:0x" << places << ": largest relative difference from Paddle's losses "
            << worst_10 << " (steps 1-10), " << std::max(worst_10, worst_20) << " (steps 1-20)\n";
}

INSTANTIATE_TEST_SUITE_P(
    fixtures, GpuPaddlePrograms,
    ::testing::Combine(::testing::Values("mlp_cross_entropy2", "mlp_dropout_l2decay", "lenet_batch_norm",
                                         "resnet_small", "bow_classifier", "lr_schedule"),
                       ::testing::Values(1, 2)),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "p"; });

} // namespace
} // namespace pe

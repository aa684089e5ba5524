// Programs Paddle saved, trained on GPU places simulated on the host
// (tests/support/host_gpu_device.hpp: the GPU places' streams and copies, the CPU's
// kernels): the Paddle training fixtures give Paddle's losses within 1e-4 relative over 20
// steps on one simulated GPU place and on two logical ones, with the device reporting its
// work finished a while after each launch, as a GPU does. What this proves is the executor's
// GPU-place paths on these programs (Paddle's parameters set into device memory, INT64
// feeds, the sub-blocks of conditional_block on a GPU place, fetching the loss back);
// tests/gpu_paddle_programs_test.cpp runs the same on a real GPU with its kernels.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/host_gpu_device.hpp"
#include "tests/support/paddle_fixtures.hpp"

namespace pe {
namespace {

class HostGpuPaddlePrograms : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  static void SetUpTestSuite() { testing::simulate_gpu_places(); }
  void SetUp() override { testing::set_simulated_device_lag(std::chrono::microseconds(50)); }
  void TearDown() override { testing::set_simulated_device_lag(std::chrono::nanoseconds(0)); }
};

TEST_P(HostGpuPaddlePrograms, TrainAsPaddleDid) {
  const auto& [name, places] = GetParam();
  const auto [paddle, ours] = testing::paddle_and_gpu0_losses(name, places);
  ASSERT_EQ(paddle.size(), 20u);
  ASSERT_EQ(ours.size(), paddle.size());
  for (std::size_t s = 0; s < ours.size(); ++s)
    EXPECT_NEAR(ours[s], paddle[s], 1e-4 * std::abs(paddle[s])) << name << " on gpu:0x" << places << ", step " << s + 1;
  EXPECT_TRUE(testing::simulated_devices_idle()) << "the last step returned before its device work ended";
}

INSTANTIATE_TEST_SUITE_P(fixtures, HostGpuPaddlePrograms,
                         testing::paddle_training_cases(), testing::paddle_training_case_name);

} // namespace
} // namespace pe

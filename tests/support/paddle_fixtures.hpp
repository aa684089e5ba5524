#pragma once

#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"

namespace pe::testing {

/// tests/data: $PE_SOURCE_DIR/tests/data when PE_SOURCE_DIR is set (a test binary built on
/// another machine and run in a copy of the tree, as scripts/gpu_check.sh --prebuilt runs
/// them on the GPU machine), else this build's source tree. Every test executable defines
/// PE_TEST_DATA_DIR.
inline std::string test_data_dir() {
  const char* root = std::getenv("PE_SOURCE_DIR");
  return root != nullptr && *root != '\0' ? std::string(root) + "/tests/data" : std::string(PE_TEST_DATA_DIR);
}

/// The path of `name` in tests/data/paddle_params: programs and parameter files Paddle 2.6
/// wrote (scripts/make_paddle_fixture.py).
inline std::string paddle_fixture(const std::string& name) { return test_data_dir() + "/paddle_params/" + name; }

/// The folder of the training fixture `name`: tests/data/paddle_<name>/ (startup.pb, main.pb,
/// Paddle's initial parameters in params/, one batch as <feed>.npy, Paddle's losses in
/// losses_<places>p.npy), from scripts/make_paddle_fixture.py.
inline std::string paddle_training_fixture(const std::string& name) { return test_data_dir() + "/paddle_" + name; }

/// The training fixtures (tests/data/paddle_<name>/) every executor and place kind is held to
/// Paddle's losses on, on 1 and on 2 places: the parameters of those tests.
inline const std::vector<std::string> paddle_training_fixtures = {
    "mlp_cross_entropy2", "mlp_dropout_l2decay", "lenet_batch_norm", "resnet_small",
    "bow_classifier",     "lr_schedule",         "encoder_classifier"};

/// Every (fixture, places) pair of paddle_training_fixtures on 1 and 2 places.
inline auto paddle_training_cases() {
  return ::testing::Combine(::testing::ValuesIn(paddle_training_fixtures), ::testing::Values(1, 2));
}

/// "<fixture>_<places>p": a test name for one of those pairs.
inline std::string paddle_training_case_name(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "p";
}

/// Every feed of `main` from the fixture folder `dir`'s <feed>.npy files, whole.
feed_map paddle_fixture_feeds(const std::string& dir, const proto::ProgramDesc& main);

/// Our losses of `steps` steps of the training fixture in `dir` on `where`, from Paddle's
/// initial parameters and the fixture's one batch, each the mean of the places' losses (every
/// place has the same number of rows in the fixtures, so that is the global batch's mean).
std::vector<float> paddle_fixture_losses(const std::string& dir, const std::vector<place>& where,
                                         std::int64_t steps);

/// Paddle's losses of the training fixture in `dir` on `places` places (losses_<places>p.npy).
std::vector<float> paddles_losses(const std::string& dir, int places);

/// Paddle's losses of the training fixture `name` on `places` places, and ours over as many
/// steps on as many logical places of GPU 0 (gpu:0xN: a real GPU, or one simulated on the
/// host where a test made GPU places open so).
struct fixture_losses {
  std::vector<float> paddle, ours;
};
fixture_losses paddle_and_gpu0_losses(const std::string& name, int places);

} // namespace pe::testing

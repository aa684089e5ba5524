// Ctrl-C and SIGTERM for pe-actor-run: the real binary, signalled while it trains.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "idx_files.hpp"
#include "tests/support/child_run.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::child_run;
using testing::slurp;
using testing::temp_dir;

constexpr auto patience = std::chrono::seconds(60);
const std::string asked_steps = "1000000"; // far more than a test waits for

/// A run that is still training when the test signals it: a tiny MLP on one place, for a
/// million steps, with evaluation, metrics and a checkpoint directory.
std::vector<std::string> long_run(const temp_dir& dir) {
  return {"--places", "cpu:1", "--hidden", "8", "--batch-size", "16", "--steps", asked_steps,
          "--eval", "--metrics", dir.file("metrics.json"), "--save-params", dir.file("ckpt")};
}

struct signal_case {
  int signal;
  const char* name;
  int status;
};

class CliSignals : public ::testing::TestWithParam<signal_case> {
 protected:
  void TearDown() override { child_.reset(); } // kills a run a failed assertion left behind

  std::optional<child_run> child_;
};

TEST_P(CliSignals, FirstSignalEndsTrainingAtAStepBoundaryAndWritesEverything) {
  const auto& c = GetParam();
  temp_dir dir(std::string("cli_signal_") + c.name);
  child_.emplace(long_run(dir));
  ASSERT_TRUE(child_->wait_for("step 1/" + asked_steps, patience)) << child_->output();
  child_->send(c.signal);
  const auto status = child_->wait_exit(patience);
  ASSERT_TRUE(status) << "still running after " << c.name << ": " << child_->output();
  ASSERT_TRUE(WIFEXITED(*status)) << child_->output();
  EXPECT_EQ(WEXITSTATUS(*status), c.status) << child_->output();

  const auto metrics = nlohmann::json::parse(slurp(dir.file("metrics.json")));
  EXPECT_EQ(metrics.at("interrupted"), true);
  EXPECT_EQ(metrics.at("signal"), c.name);
  const auto steps = metrics.at("steps").size();
  EXPECT_GE(steps, 1u);
  EXPECT_LT(steps, 1000000u);
  EXPECT_FALSE(metrics.contains("eval")) << "evaluation runs only after complete training";

  const std::string at = "at step " + std::to_string(steps) + " of " + asked_steps;
  const auto& out = child_->output();
  EXPECT_NE(out.find(std::string("training interrupted by ") + c.name + " " + at),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("trained " + std::to_string(steps) + " steps"), std::string::npos) << out;
  EXPECT_EQ(out.find("eval:"), std::string::npos) << out;
  EXPECT_EQ(out.find("pe-actor-run: error"), std::string::npos) << out;

  const auto checkpoint = nlohmann::json::parse(slurp(dir.file("ckpt/checkpoint.json")));
  EXPECT_EQ(checkpoint.at("step"), steps);
  EXPECT_NE(slurp(dir.file("ckpt/fc_0.w_0")), "");
}

INSTANTIATE_TEST_SUITE_P(IntAndTerm, CliSignals,
                         ::testing::Values(signal_case{SIGINT, "SIGINT", 130},
                                           signal_case{SIGTERM, "SIGTERM", 143}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CliSignalsTwice, SecondSignalExitsAtOnce) {
  temp_dir dir("cli_signal_twice");
  std::optional<child_run> child;
  child.emplace(long_run(dir));
  ASSERT_TRUE(child->wait_for("step 1/" + asked_steps, patience)) << child->output();
  // Stopped, the run gets both signals at once when it continues: the first asks for the
  // step boundary, the second must not wait for it.
  child->send(SIGSTOP);
  child->send(SIGINT);
  child->send(SIGTERM);
  child->send(SIGCONT);
  const auto status = child->wait_exit(patience);
  ASSERT_TRUE(status) << child->output();
  ASSERT_TRUE(WIFEXITED(*status)) << child->output();
  EXPECT_TRUE(WEXITSTATUS(*status) == 130 || WEXITSTATUS(*status) == 143) << WEXITSTATUS(*status);
  // Nothing of the orderly ending ran: no summary, no metrics, no checkpoint.
  EXPECT_EQ(child->output().find("trained "), std::string::npos) << child->output();
  EXPECT_FALSE(std::filesystem::exists(dir.file("metrics.json")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("ckpt/checkpoint.json")));
}

} // namespace
} // namespace pe

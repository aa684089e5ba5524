// pe-actor-run on numerical faults and oversized programs (issue 13): a non-finite loss stops
// training with an error naming the step, the metrics still written; --max-tensor-bytes
// bounds the tensors a program may declare.
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::run_result;
using testing::temp_dir;
using testing::slurp;

run_result run(const std::string& args, const temp_dir& dir) {
  return testing::run_binary(pe::testing::pe_actor_run_binary(), args, dir.path());
}

class NonFiniteLoss : public ::testing::TestWithParam<const char*> {};

// --lr 1e6 makes the MLP's loss blow up within a few steps.
TEST_P(NonFiniteLoss, StopsWithTheStepAndWritesMetrics) {
  temp_dir dir("cli_numeric_nan");
  const std::string metrics = dir.file("m.json");
  auto r = run(std::string(GetParam()) + " --lr 1e6 --steps 50 --eval --metrics " + metrics, dir);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m,
                                std::regex("pe-actor-run: error: step ([0-9]+): the loss is "
                                           "(-?nan|-?inf), not finite; training stopped")))
      << r.err;
  const int step = std::stoi(m[1]);
  EXPECT_LT(step, 50);
  EXPECT_NE(r.out.find("step " + std::to_string(step) + "/50  loss"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("eval:"), std::string::npos) << "no eval after a non-finite loss";

  ASSERT_TRUE(std::filesystem::exists(metrics));
  auto json = nlohmann::json::parse(slurp(metrics));
  EXPECT_EQ(json.at("nonfinite_loss_step").get<int>(), step);
  ASSERT_EQ(json.at("steps").size(), static_cast<std::size_t>(step));
  EXPECT_EQ(json.at("steps").back().at("step").get<int>(), step);
  EXPECT_FALSE(json.contains("eval"));
}

INSTANTIATE_TEST_SUITE_P(Executors, NonFiniteLoss,
                         ::testing::Values("--places cpu:2", "--places cpu:1",
                                           "--executor reference"));

TEST(CliCheckNanInf, NamesTheOpPlaceAndVariable) {
  temp_dir dir("cli_numeric_check");
  const std::string metrics = dir.file("m.json");
  for (const char* executor : {"--places cpu:2", "--executor reference"}) {
    std::filesystem::remove(metrics);
    auto r = run(std::string(executor) + " --lr 1e6 --steps 50 --check-nan-inf --metrics " + metrics, dir);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_TRUE(std::regex_search(
        r.err, std::regex("pe-actor-run: error: op #[0-9]+ \\([a-z_0-9]+\\) on cpu:[01]: output "
                          "variable '[^']+' \\[[0-9, ]+\\] holds (-?nan|-?inf) at element "
                          "[0-9]+ \\(--check-nan-inf\\)")))
        << executor << ": " << r.err;
    // The steps before the failed one are in the metrics, with the failure.
    ASSERT_TRUE(std::filesystem::exists(metrics)) << executor;
    const auto json = nlohmann::json::parse(slurp(metrics));
    const int failed = json.at("failed_step").get<int>();
    EXPECT_GE(failed, 2) << "--lr 1e6 overflows after a step or two";
    EXPECT_EQ(json.at("steps").size(), static_cast<std::size_t>(failed - 1));
    EXPECT_NE(json.at("error").get<std::string>().find("(--check-nan-inf)"), std::string::npos);
  }
}

TEST(CliMaxTensorBytes, RefusesLargerTensorsNamingOpAndVariable) {
  temp_dir dir("cli_numeric_max_bytes");
  // The default MLP's first weight is 784 x 256 FP32, 802816 bytes.
  auto r = run("--steps 1 --max-tensor-bytes 802815", dir);
  EXPECT_EQ(r.status, 2);
  for (const char* part : {"pe-actor-run: error: ", "op #", "needs 802816 bytes",
                           "802815 bytes (--max-tensor-bytes)"})
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " not in " << r.err;

  r = run("--steps 1 --max-tensor-bytes 802816", dir);
  EXPECT_EQ(r.status, 0) << r.err;

  r = run("--steps 1 --max-tensor-bytes 0", dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--max-tensor-bytes must be positive"), std::string::npos) << r.err;
}

TEST(CliNumeric, HelpListsTheFlags) {
  temp_dir dir("cli_numeric_help");
  auto r = run("--help", dir);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--max-tensor-bytes"), std::string::npos);
  EXPECT_NE(r.out.find("half the physical memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--check-nan-inf"), std::string::npos);
}

} // namespace
} // namespace pe

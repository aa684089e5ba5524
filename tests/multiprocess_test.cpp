// Several pe-actor-run processes training as one job on 127.0.0.1: losses equal to one process
// over the same number of places, bit-identical from run to run; a Paddle program's named
// feeds shared across processes as Paddle's places share them; a killed, frozen or
// mismatched process ends the job with errors naming it, and nothing is left running.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/process_backend.hpp"
#include "data/npy.hpp"
#include "idx_files.hpp"
#include "support/job.hpp"
#include "support/process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace pe::testing;

/// The same training in one process over `places` places.
std::vector<double> one_process(const temp_dir& dir, const std::string& flags, const std::string& places) {
  auto r = pe::testing::run_binary(pe::testing::pe_actor_run_binary(), flags + " --places " + places + " --metrics " +
                                                     dir.file("single.json"), dir.path());
  EXPECT_EQ(r.status, 0) << r.err;
  return losses(dir.file("single.json"));
}

/// The last loss of the summary every rank prints: "trained 12 steps ...: loss 3 -> 2.36857, ..."
/// -> "2.36857".
std::string last_loss(const std::string& out) {
  const auto summary = out.find("trained 12 steps");
  const auto at = out.find(" -> ", summary);
  if (summary == std::string::npos || at == std::string::npos) return "(no summary)";
  return out.substr(at + 4, out.find(',', at) - at - 4);
}

struct equality_case {
  const char* name;
  int processes;
  const char* local_places;
  const char* all_places; ///< the one-process run with the same total
  const char* flags;
};

/// Test names in ctest: the case's name, not its bytes.
void PrintTo(const equality_case& c, std::ostream* os) {
  *os << c.name;
}

/// Whether this build has the collective backend `name` (gloo needs libgloo-dev).
bool built_with(const std::string& name) {
  for (const auto& b : pe::process_backends())
    if (b.name == name) return true;
  return false;
}

/// The jobs' tests run with every cross-process backend: " --collective-backend NAME".
const auto backends = ::testing::Values(std::string("caf"), std::string("gloo"), std::string("shm"));

#define SKIP_WITHOUT(backend)                                                                      \
  if (!built_with(backend)) GTEST_SKIP() << "this build has no " << (backend) << " backend"

class JobEqualsOneProcess : public ::testing::TestWithParam<std::tuple<equality_case, std::string>> {};

TEST_P(JobEqualsOneProcess, LossesMatchWithinFp32GroupingAndRepeatBitForBit) {
  const auto& [c, backend] = GetParam();
  SKIP_WITHOUT(backend);
  temp_dir dir(std::string("mp_") + c.name + "_" + backend);
  const std::string flags = std::string(c.flags) + " --steps 12 --seed 3";
  const std::string job_flags = flags + " --collective-backend " + backend;
  const auto expected = one_process(dir, flags, c.all_places);
  ASSERT_EQ(expected.size(), 12u);
  std::vector<double> first;
  for (int run = 0; run < 2; ++run) {
    const std::string metrics = dir.file("job" + std::to_string(run) + ".json");
    auto args = words(job_flags + " --places " + c.local_places + " --metrics " + metrics);
    job j(dir, c.processes, args);
    const auto statuses = j.wait();
    for (std::size_t r = 0; r < statuses.size(); ++r) ASSERT_EQ(statuses[r], 0) << "rank " << r << "\n" << j.errors();
    const auto got = losses(metrics);
    ASSERT_EQ(got.size(), expected.size());
    // The processes' gradients are summed per process first, then across processes:
    // ((p0 + p1) + (p2 + p3)) where one process sums (((p0 + p1) + p2) + p3). fp32
    // rounding of those sums differs by ulps and grows over 12 SGD steps: 1e-4 relative.
    for (std::size_t s = 0; s < got.size(); ++s)
      EXPECT_NEAR(got[s], expected[s], 1e-4 * std::abs(expected[s])) << "step " << s + 1;
    if (run == 0) first = got;
    else EXPECT_EQ(got, first) << "two runs of the same job differ";
    // Every rank computed the same global losses: the summaries say the same.
    for (auto& r : j.ranks) EXPECT_EQ(last_loss(r->out()), last_loss(j.ranks[0]->out()));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, JobEqualsOneProcess,
    ::testing::Combine(
        ::testing::Values(equality_case{"TwoByOne", 2, "cpu:1", "cpu:2", "--batch-size 64"},
                          equality_case{"TwoByTwoFused", 2, "cpu:2", "cpu:4", "--batch-size 64 --fuse-allreduce-mb 1"},
                          equality_case{"ThreeUnevenBatch", 3, "cpu:1", "cpu:3", "--batch-size 50"},
                          equality_case{"ThreeReduceMode", 3, "cpu:1", "cpu:3", "--batch-size 48 --reduce reduce"},
                          equality_case{"TwoByTwoReduceAdam", 2, "cpu:2", "cpu:4", "--batch-size 64 --reduce reduce --optimizer adam --lr 0.01"},
                          // batch statistics all-reduced across the processes' places too
                          equality_case{"TwoByOneSyncBatchNorm", 2, "cpu:1", "cpu:2", "--model cnn --batch-size 24 --lr 0.001 --sync-batch-norm"}),
        backends),
    [](const auto& info) { return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param); });

/// The restart and fault tests, once per backend.
class JobWithBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { SKIP_WITHOUT(GetParam()); }
  std::string backend_flag() const { return " --collective-backend " + GetParam() + " "; }
};

INSTANTIATE_TEST_SUITE_P(Backends, JobWithBackend, backends, [](const auto& info) { return info.param; });

/// The losses of `steps` [first, last] (numbered from 1) in a metrics file.
std::vector<double> losses_of_steps(const std::string& metrics_file, int first, int last) {
  std::ifstream in(metrics_file);
  std::vector<double> out;
  if (!in) return out;
  const auto metrics = nlohmann::json::parse(in);
  for (const auto& s : metrics.at("steps"))
    if (s.at("step").get<int>() >= first && s.at("step").get<int>() <= last)
      out.push_back(s.at("loss").get<double>());
  return out;
}

TEST_P(JobWithBackend, ARestartedJobContinuesTheLossCurve) {
  temp_dir dir("mp_restart_" + GetParam());
  const std::string flags = "--places cpu:1 --optimizer adam --lr 0.01 --batch-size 40" + backend_flag();
  {
    job whole(dir, 2, words(flags + "--steps 12 --metrics " + dir.file("whole.json")));
    for (auto status : whole.wait()) ASSERT_EQ(status, 0) << whole.errors();
  }
  {
    job first(dir, 2, words(flags + "--steps 6 --save-params " + dir.file("ck")));
    for (auto status : first.wait()) ASSERT_EQ(status, 0) << first.errors();
  }
  job rest(dir, 2, words(flags + "--steps 12 --load-params " + dir.file("ck") + " --metrics " +
                         dir.file("rest.json")));
  for (auto status : rest.wait()) ASSERT_EQ(status, 0) << rest.errors();
  const auto expected = losses_of_steps(dir.file("whole.json"), 7, 12);
  ASSERT_EQ(expected.size(), 6u);
  EXPECT_EQ(losses_of_steps(dir.file("rest.json"), 7, 12), expected);
}

TEST(JobSignals, SigtermToTheLauncherStopsEveryRankAtTheSameStep) {
  temp_dir dir("mp_sigterm");
  // A rank's stdout is a pipe to the launcher: plain step lines, here every 10th.
  std::vector<std::string> args{"--nproc", "2", "--", "--places", "cpu:1", "--steps", "1000000",
                                "--log-every", "10", "--metrics", dir.file("m.json"),
                                "--save-params", dir.file("ck")};
  rank_process launcher(args, dir.file("out"), dir.file("err"), PE_LAUNCH_BINARY);
  ASSERT_TRUE(launcher.printed("[rank 0] step 20/", 60s)) << launcher.err();
  ::kill(launcher.pid(), SIGTERM);
  auto status = launcher.wait(60s);
  ASSERT_TRUE(status.has_value()) << "the job still runs after SIGTERM";
  EXPECT_EQ(*status, 143) << launcher.err();
  const std::string out = launcher.out();
  EXPECT_EQ(out.find('\r'), std::string::npos) << "a rank is not a terminal: no in-place lines";
  const auto stopped = [&](int rank) {
    const std::string line = "[rank " + std::to_string(rank) + "] training interrupted by SIGTERM at step ";
    const auto at = out.find(line);
    return at == std::string::npos ? std::string("(none)") : out.substr(at + line.size(), out.find(' ', at + line.size()) - at - line.size());
  };
  EXPECT_NE(stopped(0), "(none)") << out;
  EXPECT_EQ(stopped(0), stopped(1)) << out;
  std::ifstream metrics(dir.file("m.json"));
  ASSERT_TRUE(metrics.good());
  const auto m = nlohmann::json::parse(metrics);
  EXPECT_TRUE(m.at("interrupted").get<bool>());
  EXPECT_EQ(std::to_string(m.at("steps").size()), stopped(0));
  EXPECT_TRUE(std::filesystem::exists(dir.file("ck") + "/checkpoint.json"));
}

TEST(JobSignals, ASignalToOneRankStopsEveryRankAtTheSameStep) {
  // Only rank 2 is signalled: its vote travels with a step's fetches, and all three stop
  // after that step, each saying so and exiting 143.
  temp_dir dir("mp_vote");
  job j(dir, 3, words("--places cpu:1 --steps 1000000 --log-every 10 --metrics " + dir.file("m.json")));
  ASSERT_TRUE(j.ranks[0]->printed("step 20/", 60s)) << j.errors();
  ::kill(j.ranks[2]->pid(), SIGTERM);
  const auto statuses = j.wait(60s);
  std::vector<std::string> stopped_at;
  for (std::size_t r = 0; r < statuses.size(); ++r) {
    ASSERT_TRUE(statuses[r].has_value()) << "rank " << r << " still runs after rank 2's SIGTERM";
    EXPECT_EQ(*statuses[r], 143) << "rank " << r << "\n" << j.errors();
    const std::string out = j.ranks[r]->out(), line = "training interrupted by SIGTERM at step ";
    const auto at = out.find(line);
    ASSERT_NE(at, std::string::npos) << "rank " << r << ": " << out;
    stopped_at.push_back(out.substr(at + line.size(), out.find(' ', at + line.size()) - at - line.size()));
  }
  EXPECT_EQ(stopped_at[0], stopped_at[1]);
  EXPECT_EQ(stopped_at[0], stopped_at[2]);
  std::ifstream metrics(dir.file("m.json"));
  ASSERT_TRUE(metrics.good());
  EXPECT_EQ(std::to_string(nlohmann::json::parse(metrics).at("steps").size()), stopped_at[0]);
}

TEST_P(JobWithBackend, EveryFeedOfAPaddleProgramIsSharedAsPaddlesPlacesShareIt) {
  // The bag-of-words fixture (input_ids INT64 [-1, 8] and label, fed by name from npy:DIR):
  // two processes of one place each get rows 0-3 and 4-7 of every feed, as Paddle's two
  // places did, and give its 2-place losses.
  const std::string fixture = std::string(PE_TEST_DATA_DIR) + "/paddle_bow_classifier";
  temp_dir dir("mp_feeds_" + GetParam());
  job j(dir, 2, words("--model " + fixture + "/main.pb --startup " + fixture + "/startup.pb --load-params " +
                      fixture + "/params --data npy:" + fixture + " --no-shuffle --batch-size 8 --steps 20 "
                      "--places cpu:1 --metrics " + dir.file("m.json") + backend_flag()));
  for (auto status : j.wait()) ASSERT_EQ(status, 0) << j.errors();
  const pe::tensor expected = pe::read_npy(fixture + "/losses_2p.npy");
  const auto paddle = expected.values<float>();
  const auto ours = losses(dir.file("m.json"));
  ASSERT_EQ(ours.size(), 20u);
  for (std::size_t s = 0; s < ours.size(); ++s)
    EXPECT_NEAR(ours[s], paddle[s], 1e-4 * std::abs(paddle[s])) << "step " << s + 1;
}

TEST_P(JobWithBackend, AKilledProcessEndsTheOthersNamingIt) {
  temp_dir dir("mp_kill_" + GetParam());
  job j(dir, 3, words("--places cpu:1 --steps 1000000 --log-every 10 --peer-timeout 5" + backend_flag()));
  ASSERT_TRUE(j.ranks[0]->printed("step 10/", 60s)) << j.ranks[0]->err();
  ::kill(j.ranks[1]->pid(), SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  for (int r : {0, 2}) {
    auto status = j.ranks[static_cast<std::size_t>(r)]->wait(15s);
    ASSERT_TRUE(status.has_value()) << "rank " << r << " still runs after its peer was killed";
    EXPECT_EQ(*status, 2);
    EXPECT_NE(j.ranks[static_cast<std::size_t>(r)]->err().find("lost process rank 1"), std::string::npos)
        << j.ranks[static_cast<std::size_t>(r)]->err();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s);
}

TEST_P(JobWithBackend, AFrozenProcessIsFoundByHeartbeats) {
  temp_dir dir("mp_stop_" + GetParam());
  job j(dir, 2, words("--places cpu:1 --steps 1000000 --log-every 10 --peer-timeout 2" + backend_flag()));
  ASSERT_TRUE(j.ranks[0]->printed("step 10/", 60s)) << j.ranks[0]->err();
  ::kill(j.ranks[1]->pid(), SIGSTOP);
  auto status = j.ranks[0]->wait(15s);
  ::kill(j.ranks[1]->pid(), SIGKILL); // the frozen one is reaped by its destructor
  ::kill(j.ranks[1]->pid(), SIGCONT);
  ASSERT_TRUE(status.has_value()) << "rank 0 still runs with its peer frozen";
  EXPECT_EQ(*status, 2);
  EXPECT_NE(j.ranks[0]->err().find("lost process rank 1"), std::string::npos) << j.ranks[0]->err();
}

TEST(JobFaults, AProcessWithAnotherProgramIsRefusedAtJoin) {
  temp_dir dir("mp_mismatch");
  job j(dir, 2, words("--places cpu:1 --steps 5"), {{}, {"--hidden", "32"}});
  for (auto status : j.wait(60s)) EXPECT_EQ(status, 2) << j.errors();
  EXPECT_NE(j.ranks[1]->err().find("the master refused this process"), std::string::npos) << j.ranks[1]->err();
  EXPECT_NE(j.ranks[0]->err().find("process rank 1 differs from rank 0 in"), std::string::npos)
      << j.ranks[0]->err();
}

TEST(JobFaults, AProcessWithAnotherCollectiveBackendIsRefusedAtJoin) {
  SKIP_WITHOUT("gloo");
  temp_dir dir("mp_backend");
  job j(dir, 2, words("--places cpu:1 --steps 5"), {{}, {"--collective-backend", "gloo"}});
  for (auto status : j.wait(60s)) EXPECT_EQ(status, 2) << j.errors();
  EXPECT_NE(j.ranks[0]->err().find("process rank 1 differs from rank 0 in --collective-backend"),
            std::string::npos)
      << j.ranks[0]->err();
}

TEST(JobFaults, SavingAReduceModeJobsOptimizerStateIsRefusedBeforeTraining) {
  // Adam's moments change only in the process of their parameter's owner place; rank 0, which
  // writes the checkpoint, cannot read them: every rank refuses at once, naming one. SGD keeps
  // no state, so the same job with sgd saves (parameters are broadcast to every place).
  temp_dir dir("mp_reduce_save");
  job adam(dir, 2, words("--places cpu:1 --steps 3 --reduce reduce --optimizer adam --save-params " + dir.file("a")));
  for (auto status : adam.wait(60s)) EXPECT_EQ(status, 2) << adam.errors();
  for (auto& r : adam.ranks)
    EXPECT_NE(r->err().find("--save-params with --reduce reduce across processes: the optimizer state 'fc_"),
              std::string::npos)
        << adam.errors();
  EXPECT_FALSE(std::filesystem::exists(dir.file("a") + "/checkpoint.json"));
  job sgd(dir, 2, words("--places cpu:1 --steps 3 --reduce reduce --save-params " + dir.file("s")));
  for (auto status : sgd.wait(60s)) EXPECT_EQ(status, 0) << sgd.errors();
  EXPECT_TRUE(std::filesystem::exists(dir.file("s") + "/checkpoint.json"));
}

TEST(JobFaults, APlaceCountMismatchIsNamed) {
  temp_dir dir("mp_places");
  job j(dir, 2, words("--steps 5"), {{"--places", "cpu:1"}, {"--places", "cpu:2"}});
  for (auto status : j.wait(60s)) EXPECT_EQ(status, 2) << j.errors();
  EXPECT_NE(j.ranks[0]->err().find("places per process: 2 there, 1 on rank 0"), std::string::npos)
      << j.errors();
}

} // namespace

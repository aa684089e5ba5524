// Jobs of several pe-actor-run processes on GPU places, on 127.0.0.1: NCCL across processes
// (ncclCommInitRankConfig with rank 0's id) trains as one process over the same GPUs, a
// killed process ends the other through ncclCommAbort instead of leaving it blocked in a
// collective, and the configurations NCCL cannot run (one GPU in two ranks, CPU and GPU
// processes in one job) are refused with messages naming the processes. Skips without a GPU
// or without NCCL in the build; the cases that need two GPUs skip on a machine with one.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "devices/gpu_runtime.hpp"
#include "tests/support/job.hpp"
#include "tests/support/process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace pe::testing;

/// Why this machine and build cannot run a job needing `gpus` GPUs, or nullopt.
std::optional<std::string> missing(int gpus) {
  const pe::gpu_inventory inv = pe::query_gpus();
  if (inv.count == 0) return "no GPU: " + inv.problem;
#if !PE_WITH_NCCL
  return std::string("this build has no NCCL (the CUDA toolkit under /usr/local/cuda ships it)");
#endif
  if (inv.count < gpus)
    return "needs " + std::to_string(gpus) + " GPUs, " + std::to_string(inv.count) + " visible";
  return std::nullopt;
}

/// Every rank ended with status 2 within a minute.
void expect_all_failed(job& j) {
  const auto statuses = j.wait(60s);
  for (std::size_t r = 0; r < statuses.size(); ++r) {
    ASSERT_TRUE(statuses[r].has_value()) << "rank " << r << " still runs\n" << j.errors();
    EXPECT_EQ(*statuses[r], 2) << "rank " << r << "\n" << j.errors();
  }
}

/// The job was refused: every rank failed (expect_all_failed), rank 0 saying `message`.
void expect_refused(job& j, const std::string& message) {
  expect_all_failed(j);
  EXPECT_NE(j.ranks[0]->err().find(message), std::string::npos) << j.errors();
}

TEST(GpuJobs, TwoProcessesOnOneGpuAreRefusedNamingBoth) {
  if (auto why = missing(1)) GTEST_SKIP() << *why;
  // What `pe-actor-launch --nproc 2 -- --places gpu:0` does on one machine: NCCL documents one
  // GPU in two ranks as unsupported (it may hang), so both processes refuse before NCCL.
  temp_dir dir("gpu_job_shared");
  job j(dir, 2, words("--places gpu:0 --steps 5"));
  // Rank 1 finds the same, unless rank 0's exit reaches it first (then it lost rank 0).
  expect_refused(j, "process rank 1's gpu:0 is the GPU of process rank 0's gpu:0 (PCI ");
}

TEST(GpuJobs, CpuAndGpuProcessesAreRefusedAtJoin) {
  if (auto why = missing(1)) GTEST_SKIP() << *why;
  temp_dir dir("gpu_job_kinds");
  job j(dir, 2, words("--steps 5"), {{"--places", "cpu:1"}, {"--places", "gpu:0"}});
  expect_refused(j, "process rank 1 differs from rank 0 in place kind: gpu there, cpu on rank 0");
}

TEST(GpuJobs, TwoProcessesOnTwoGpusTrainAsOneProcessOnBoth) {
  if (auto why = missing(2)) GTEST_SKIP() << *why;
  temp_dir dir("gpu_job_equal");
  const std::string flags = "--batch-size 64 --steps 12 --seed 3";
  auto single = run_binary(pe_actor_run_binary(), flags + " --places gpu:0,1 --metrics " + dir.file("one.json"),
                           dir.path());
  ASSERT_EQ(single.status, 0) << single.err;
  const auto expected = losses(dir.file("one.json"));
  ASSERT_EQ(expected.size(), 12u);
  job j(dir, 2, words(flags + " --metrics " + dir.file("job.json")), {{"--places", "gpu:0"}, {"--places", "gpu:1"}});
  for (auto status : j.wait()) ASSERT_EQ(status, 0) << j.errors();
  const auto got = losses(dir.file("job.json"));
  ASSERT_EQ(got.size(), expected.size());
  // NCCL sums the two processes' gradients where one process's NCCL sums the two GPUs':
  // the same two addends, but the reduction's order and the host-side merge may differ.
  for (std::size_t s = 0; s < got.size(); ++s)
    EXPECT_NEAR(got[s], expected[s], 1e-4 * std::abs(expected[s])) << "step " << s + 1;
}

TEST(GpuJobs, AKilledProcessEndsTheOtherNamingIt) {
  if (auto why = missing(2)) GTEST_SKIP() << *why;
  // Rank 0's collectives then wait for a peer that is gone: the watchdog aborts NCCL.
  temp_dir dir("gpu_job_kill");
  job j(dir, 2, words("--steps 1000000 --log-every 10 --peer-timeout 5"), {{"--places", "gpu:0"}, {"--places", "gpu:1"}});
  ASSERT_TRUE(j.ranks[0]->printed("step 10/", 120s)) << j.errors();
  ::kill(j.ranks[1]->pid(), SIGKILL);
  const auto status = j.ranks[0]->wait(15s);
  ASSERT_TRUE(status.has_value()) << "rank 0 still runs after its peer was killed\n" << j.errors();
  EXPECT_EQ(*status, 2);
  EXPECT_NE(j.ranks[0]->err().find("lost process rank 1"), std::string::npos) << j.ranks[0]->err();
}

} // namespace

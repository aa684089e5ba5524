// The gloo collective backend (collectives/gloo/): "processes" are threads here, each with a
// process group over an in-memory transport (the handshakes and the rendezvous) and real
// Gloo TCP connections on 127.0.0.1 (the data). Results equal one process's within fp32
// grouping and bit-identical on every rank; a disagreeing or failed process fails the
// collective on every process, and nobody waits in Gloo for it.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "collectives/net/process_group.hpp"
#include "collectives/process_backend.hpp"
#include "devices/device.hpp"
#include "support/backend_job.hpp"
#include "support/expect_error.hpp"

namespace {

using namespace pe;
using namespace pe::testing;
using namespace std::chrono_literals;
using kind = collective_call::kind;

bool has_gloo() {
  for (const auto& b : process_backends())
    if (b.name == "gloo") return true;
  return false;
}

TEST(ProcessBackends, CafAndGlooAreRegisteredByName) {
  std::vector<std::string> names;
  for (const auto& b : process_backends()) names.push_back(b.name);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), default_process_backend);
  EXPECT_EQ(find_process_backend("caf").name, "caf");
  expect_error([] { find_process_backend("mpi"); }, {"no collective backend 'mpi' in this build (it has auto or caf"});
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
  EXPECT_EQ(find_process_backend("gloo").name, "gloo");
}

class GlooCollective : public ::testing::TestWithParam<std::pair<int, int>> {
 protected:
  void SetUp() override {
    if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
  }
};

TEST_P(GlooCollective, AllReduceEqualsOneProcessAndIsIdenticalOnEveryRank) {
  expect_all_reduce_equals_one_process("gloo", GetParam().first, GetParam().second);
}

TEST_P(GlooCollective, ReduceAndBroadcastWithRootsOnEveryProcess) {
  expect_reduce_and_broadcast_with_every_root("gloo", GetParam().first, GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GlooCollective,
                         ::testing::Values(std::pair{2, 1}, std::pair{2, 2}, std::pair{3, 2}),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

TEST(GlooCollectiveFaults, ProcessesThatDisagreeOnTheSizeFailEverywhere) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
  expect_disagreeing_sizes_fail_everywhere("gloo");
}

TEST(GlooCollectiveFaults, AFailedStreamFailsEveryProcessAndTheNextCollectiveStillRuns) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
  expect_failed_stream_fails_everywhere_then_recovers("gloo");
}

} // namespace

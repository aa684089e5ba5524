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
#include "support/collective_calls.hpp"
#include "support/collective_job.hpp"
#include "support/collective_values.hpp"
#include "support/expect_error.hpp"
#include "support/loopback_transport.hpp"

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

/// `processes` x `local` CPU places, one gloo communicator per process, made as a job's
/// processes make them: at the same time, through their process groups.
struct gloo_job : collective_job {
  gloo_job(int processes, int local) : collective_job(processes, local), network(processes) {
    process_group_options options;
    options.collective_backend = "gloo";
    options.peer_timeout = 10s;
    for (int p = 0; p < processes; ++p)
      groups.push_back(std::make_unique<process_group>(network.transport(p), 0, 30s, options));
    std::vector<std::future<std::unique_ptr<communicator>>> made;
    for (auto& g : groups)
      made.push_back(std::async(std::launch::async, [&g, local] { return g->make_communicator(local); }));
    for (auto& m : made) comms.push_back(m.get());
  }
  ~gloo_job() {
    // The communicators before the groups they use.
    for (auto& c : comms) c->abort();
    for (auto& d : devices) d->stop();
    comms.clear();
  }

  loopback_network network;
  std::vector<std::unique_ptr<process_group>> groups;
};

TEST(ProcessBackends, CafAndGlooAreRegisteredByName) {
  std::vector<std::string> names;
  for (const auto& b : process_backends()) names.push_back(b.name);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), default_process_backend);
  EXPECT_EQ(find_process_backend("caf").name, "caf");
  expect_error([] { find_process_backend("mpi"); }, {"no collective backend 'mpi' in this build (it has caf"});
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
  const auto [processes, local] = GetParam();
  gloo_job j(processes, local);
  auto values = random_buffers(j.world(), 7);
  const auto expected = single_process(test_call(kind::all_reduce, 0), clone_all(values));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 1), r, {&values[r][0]});
  for (auto ok : j.sync_all(20000)) ASSERT_EQ(ok, true);
  for (int r = 0; r < j.world(); ++r)
    for (std::size_t v = 1; v < values[r].size(); ++v) {
      EXPECT_LT(relative_difference(values[r][v], expected[r][v]), 1e-6) << "rank " << r << " var " << v;
      EXPECT_TRUE(bit_identical(values[r][v], values[0][v])) << "rank " << r << " var " << v;
    }
  EXPECT_NEAR(values[0][0].values<float>()[0], expected[0][0].values<float>()[0] * j.world(), 1e-4);
}

TEST_P(GlooCollective, ReduceAndBroadcastWithRootsOnEveryProcess) {
  const auto [processes, local] = GetParam();
  gloo_job j(processes, local);
  for (int root = 0; root < j.world(); ++root) {
    auto values = random_buffers(j.world(), 11 + root);
    const auto reduced = single_process(test_call(kind::reduce, 0, root), clone_all(values));
    const std::uint64_t first = 2 * static_cast<std::uint64_t>(root);
    for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::reduce, first, root), r, pointers(values[r]));
    for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::broadcast, first + 1, root), r, pointers(values[r]));
    for (auto ok : j.sync_all(20000)) ASSERT_EQ(ok, true);
    for (int r = 0; r < j.world(); ++r)
      for (std::size_t v = 0; v < values[r].size(); ++v) {
        EXPECT_LT(relative_difference(values[r][v], reduced[root][v]), 1e-6) << "root " << root;
        EXPECT_TRUE(bit_identical(values[r][v], values[root][v])) << "root " << root << " rank " << r;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GlooCollective,
                         ::testing::Values(std::pair{2, 1}, std::pair{2, 2}, std::pair{3, 2}),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

TEST(GlooCollectiveFaults, ProcessesThatDisagreeOnTheSizeFailEverywhere) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
  gloo_job j(3, 1);
  auto a = tensor::from_vector(std::vector<float>(10, 1.f), {10});
  auto b = tensor::from_vector(std::vector<float>(10, 1.f), {10});
  auto c = tensor::from_vector(std::vector<float>(12, 1.f), {12});
  j.launch(test_call(kind::all_reduce, 0), 0, {&a});
  j.launch(test_call(kind::all_reduce, 0), 1, {&b});
  j.launch(test_call(kind::all_reduce, 0), 2, {&c});
  for (auto ok : j.sync_all(20000)) EXPECT_EQ(ok, false);
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(j.error(r).find("the processes disagree on the collective"), std::string::npos) << j.error(r);
  EXPECT_NE(j.error(2).find("over 12 floats"), std::string::npos) << j.error(2);
}

TEST(GlooCollectiveFaults, AFailedStreamFailsEveryProcessAndTheNextCollectiveStillRuns) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
  gloo_job j(2, 2);
  auto values = random_buffers(j.world(), 5);
  j.on(3).enqueue([] { throw error("kernel on rank 3 failed"); });
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (auto ok : j.sync_all(20000)) EXPECT_EQ(ok, false);
  EXPECT_NE(j.error(0).find("failed"), std::string::npos) << j.error(0);
  // After the failure, as the executor does between steps: streams cleared, next sequence.
  for (int r = 0; r < j.world(); ++r) j.on(r).clear_error();
  auto again = random_buffers(j.world(), 6);
  const auto expected = single_process(test_call(kind::all_reduce, 0), clone_all(again));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 1), r, pointers(again[r]));
  for (auto ok : j.sync_all(20000)) ASSERT_EQ(ok, true);
  for (int r = 0; r < j.world(); ++r)
    EXPECT_LT(relative_difference(again[r][2], expected[r][2]), 1e-6) << "rank " << r;
}

} // namespace

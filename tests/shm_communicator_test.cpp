// The shm collective backend (collectives/shm/): "processes" are threads here, each with a
// process group over an in-memory transport (the rendezvous of the segment) and the shared
// memory segment mapped once per "process". Results equal one process's within fp32
// grouping, bit-identical on every rank and to the caf backend's; collectives larger than a
// slot go in several rounds; a disagreeing, failed or lost process fails the collective on
// every process, and nobody waits forever.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/net/net_transport.hpp"
#include "collectives/net/process_group.hpp"
#include "collectives/process_backend.hpp"
#include "collectives/shm/shm_communicator.hpp"
#include "collectives/shm/shm_segment.hpp"
#include "support/backend_job.hpp"
#include "support/collective_calls.hpp"
#include "support/collective_values.hpp"
#include "support/expect_error.hpp"

namespace {

using namespace pe;
using namespace pe::testing;
using namespace std::chrono_literals;
using kind = collective_call::kind;

/// An shm communicator over slots of `slot_bytes` (many rounds per collective).
backend_job::maker small_slots(std::size_t slot_bytes) {
  return [slot_bytes](process_group& g, int local) -> std::unique_ptr<communicator> {
    return std::make_unique<shm_communicator>(g, std::make_shared<shm_segment>(shm_segment::join(g, slot_bytes)),
                                              local);
  };
}

/// The names in /dev/shm that this test process's segments would have.
int own_segments() {
  const std::string prefix = "pe-actor-shm-" + std::to_string(::getpid()) + "-";
  int found = 0;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) ++found;
    ::closedir(d);
  }
  return found;
}

TEST(ShmBackend, IsRegisteredByName) {
  EXPECT_EQ(find_process_backend("shm").name, "shm");
}

class ShmCollective : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(ShmCollective, AllReduceEqualsOneProcessAndIsIdenticalOnEveryRank) {
  expect_all_reduce_equals_one_process("shm", GetParam().first, GetParam().second);
}

TEST_P(ShmCollective, ReduceAndBroadcastWithRootsOnEveryProcess) {
  expect_reduce_and_broadcast_with_every_root("shm", GetParam().first, GetParam().second);
}

TEST_P(ShmCollective, ManyRoundsGiveTheBitsOfOneRound) {
  // Slots of 64 floats: every buffer of random_buffers' spans rounds, and pieces of several
  // buffers share a round.
  const auto [processes, local] = GetParam();
  backend_job small(processes, local, "shm", small_slots(64 * sizeof(float)));
  backend_job whole(processes, local, "shm");
  auto a = random_buffers(small.world(), 21), b = clone_all(a);
  for (std::uint64_t s = 0; s < 3; ++s) // three collectives in a row: the rounds go on across them
    for (int r = 0; r < small.world(); ++r) {
      small.launch(test_call(kind::all_reduce, s), r, pointers(a[r]));
      whole.launch(test_call(kind::all_reduce, s), r, pointers(b[r]));
    }
  for (auto ok : small.sync_all(20000)) ASSERT_EQ(ok, true);
  for (auto ok : whole.sync_all(20000)) ASSERT_EQ(ok, true);
  for (int r = 0; r < small.world(); ++r)
    for (std::size_t v = 0; v < a[r].size(); ++v)
      EXPECT_TRUE(bit_identical(a[r][v], b[r][v])) << "rank " << r << " var " << v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ShmCollective,
                         ::testing::Values(std::pair{2, 1}, std::pair{2, 2}, std::pair{3, 2}),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

TEST(ShmCollectiveResults, BitIdenticalToTheCafBackendOnTwoProcesses) {
  // Both sum each process's local sum in process order.
  backend_job shm(2, 2, "shm"), caf(2, 2, "caf");
  auto a = random_buffers(shm.world(), 5), b = clone_all(a);
  for (int r = 0; r < shm.world(); ++r) {
    shm.launch(test_call(kind::all_reduce, 0), r, pointers(a[r]));
    caf.launch(test_call(kind::all_reduce, 0), r, pointers(b[r]));
  }
  for (auto ok : shm.sync_all(20000)) ASSERT_EQ(ok, true);
  for (auto ok : caf.sync_all(20000)) ASSERT_EQ(ok, true);
  for (int r = 0; r < shm.world(); ++r)
    for (std::size_t v = 0; v < a[r].size(); ++v)
      EXPECT_TRUE(bit_identical(a[r][v], b[r][v])) << "rank " << r << " var " << v;
}

TEST(ShmSegment, LeavesNoNameBehind) {
  {
    backend_job j(2, 1, "shm");
    EXPECT_EQ(own_segments(), 0) << "rank 0 removes the name once every process has it mapped";
    auto values = random_buffers(j.world(), 3);
    for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
    for (auto ok : j.sync_all(20000)) ASSERT_EQ(ok, true);
  }
  EXPECT_EQ(own_segments(), 0);
}

TEST(ShmCollectiveFaults, ProcessesThatDisagreeOnTheSizeFailEverywhere) {
  expect_disagreeing_sizes_fail_everywhere("shm");
}

TEST(ShmCollectiveFaults, AFailedStreamFailsEveryProcessAndTheNextCollectiveStillRuns) {
  expect_failed_stream_fails_everywhere_then_recovers("shm");
}

TEST(ShmCollectiveFaults, AFailedStreamIsNamedByItsProcess) {
  backend_job j(2, 1, "shm");
  auto values = random_buffers(j.world(), 5);
  j.on(1).enqueue([] { throw error("kernel on rank 1 failed"); });
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (auto ok : j.sync_all(20000)) EXPECT_EQ(ok, false);
  EXPECT_NE(j.error(0).find("failed on process rank 1"), std::string::npos) << j.error(0);
}

TEST(ShmCollectiveFaults, ALostProcessFailsTheWaitingOnesWithTheGroupsReason) {
  backend_job j(2, 1, "shm");
  auto values = random_buffers(j.world(), 8);
  j.launch(test_call(kind::all_reduce, 0), 0, pointers(values[0])); // rank 1 never joins
  std::this_thread::sleep_for(20ms);
  j.network.inbox(0).fail("lost process rank 1 (no heartbeat for 10000 ms)");
  const auto start = std::chrono::steady_clock::now();
  const std::optional<bool> ok = j.on(0).synchronize_for(5000ms);
  ASSERT_TRUE(ok.has_value()) << "the waiting process must not wait forever";
  EXPECT_FALSE(*ok);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "the watcher's timed wake-ups find the break";
  EXPECT_NE(j.error(0).find("lost process rank 1"), std::string::npos) << j.error(0);
}

TEST(ShmCollectiveFaults, SparseRowsAreRefusedByName) {
  backend_job j(2, 1, "shm");
  collective_call gather = test_call(kind::all_gather, 0);
  auto t = tensor::from_vector(std::vector<float>(4, 1.f), {4});
  expect_error([&] { j.comms[0]->launch(gather, 0, {&t}, j.on(0)); }, {"the shm backend does not run all_gather"});
}

/// Every process's all_gather of `parts[p]` at once, as a job's processes make it.
std::vector<std::vector<byte_buffer>> gather_all(backend_job& j, const std::vector<byte_buffer>& parts) {
  std::vector<std::future<std::vector<byte_buffer>>> running;
  for (std::size_t p = 0; p < parts.size(); ++p)
    running.push_back(std::async(std::launch::async, [&j, &parts, p] { return j.groups[p]->all_gather(parts[p]); }));
  std::vector<std::vector<byte_buffer>> out;
  for (auto& r : running) out.push_back(r.get());
  return out;
}

byte_buffer part(std::size_t bytes, char fill) { return byte_buffer(bytes, fill); }

TEST(ShmHostExchange, GathersThroughTheSegmentWithoutAMessage) {
  backend_job j(3, 1, "shm");
  const std::uint64_t sent_before = payload_bytes_sent();
  for (int round = 0; round < 5; ++round) { // rounds alternate between the slots
    const std::vector<byte_buffer> parts = {part(10, 'a'), part(0, 'b'), part(1000 + round, 'c')};
    const auto got = gather_all(j, parts);
    for (std::size_t p = 0; p < parts.size(); ++p) EXPECT_EQ(got[p], parts) << "process " << p;
  }
  EXPECT_EQ(payload_bytes_sent(), sent_before) << "no byte went through the transport";
}

TEST(ShmHostExchange, APartOverASlotSendsEveryProcessToTheMessagesForThatExchange) {
  backend_job j(2, 1, "shm");
  const std::uint64_t sent_before = payload_bytes_sent();
  const std::vector<byte_buffer> big = {part(shm_segment::exchange_slot_bytes, 'x'), part(3, 'y')};
  const auto got = gather_all(j, big);
  for (std::size_t p = 0; p < big.size(); ++p) EXPECT_EQ(got[p], big) << "process " << p;
  EXPECT_GT(payload_bytes_sent(), sent_before);
  // The next exchange is back on the segment, in step on both processes.
  const std::uint64_t sent_after = payload_bytes_sent();
  const std::vector<byte_buffer> small = {part(4, 'p'), part(5, 'q')};
  const auto again = gather_all(j, small);
  for (std::size_t p = 0; p < small.size(); ++p) EXPECT_EQ(again[p], small) << "process " << p;
  EXPECT_EQ(payload_bytes_sent(), sent_after);
}

TEST(ShmHostExchange, ALostProcessEndsTheWaitWithTheGroupsReason) {
  backend_job j(2, 1, "shm");
  std::thread breaker([&j] {
    std::this_thread::sleep_for(30ms);
    j.network.inbox(0).fail("lost process rank 1 (no heartbeat for 10000 ms)");
  });
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { j.groups[0]->all_gather(part(8, 'z')); }, {"lost process rank 1"});
  breaker.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

} // namespace

// The shm collective backend (collectives/shm/): "processes" are threads here, each with a
// process group over an in-memory transport (the rendezvous of the segment) and the shared
// memory segment mapped once per "process". Results equal one process's within fp32
// grouping, bit-identical on every rank and to the caf backend's; collectives larger than a
// slot go in several rounds; a disagreeing, failed or lost process fails the collective on
// every process, and nobody waits forever.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/net/net_communicator.hpp"
#include "collectives/net/net_transport.hpp"
#include "collectives/net/process_group.hpp"
#include "collectives/process_backend.hpp"
#include "collectives/shm/shm_backend.hpp"
#include "collectives/shm/shm_communicator.hpp"
#include "collectives/shm/shm_segment.hpp"
#include "core/selected_rows.hpp"
#include "support/backend_job.hpp"
#include "support/collective_calls.hpp"
#include "support/collective_values.hpp"
#include "support/expect_error.hpp"
#include "support/loopback_transport.hpp"

namespace {

using namespace pe;
using namespace pe::testing;
using namespace std::chrono_literals;
using kind = collective_call::kind;

/// An shm communicator over slots of `slot_bytes` (many rounds per collective).
backend_job::maker small_slots(std::size_t slot_bytes) {
  return [slot_bytes](process_group& g, int local) -> std::unique_ptr<communicator> {
    process_backend small = find_process_backend("shm");
    small.make = [slot_bytes](const process_backend_context& c) -> std::unique_ptr<communicator> {
      std::string why_not;
      auto made = try_shm_communicator(c, why_not, slot_bytes);
      if (!made) throw error(why_not);
      return made;
    };
    return g.make_communicator(local, small);
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

/// What a job of `backend` gives for all_reduce #0, all_gather #1 with exchange `mode`,
/// all_reduce #2 and a sparse all_gather #3, launched together: the dense buffers and both
/// gathers' rows on every rank, and whether each process's span of #1 said dense.
struct mixed_run {
  std::vector<std::vector<tensor>> dense;
  std::vector<tensor> first_rows, second_rows;
  std::vector<bool> first_dense;
};

mixed_run run_mixed(const std::string& backend, int processes, int local, sparse_exchange mode) {
  backend_job j(processes, local, backend);
  mixed_run out;
  out.dense = random_buffers(j.world(), 3);
  for (int r = 0; r < j.world(); ++r) {
    out.first_rows.push_back(rank_rows(r));
    out.second_rows.push_back(rank_rows(j.world() - 1 - r));
  }
  // The completion runs once per collective and process (on one of its places' threads).
  std::vector<std::atomic<bool>> dense(static_cast<std::size_t>(processes));
  collective_call first = test_call(kind::all_gather, 1), second = test_call(kind::all_gather, 3);
  first.exchange = mode;
  second.exchange = sparse_exchange::sparse;
  for (int r = 0; r < j.world(); ++r) {
    const auto at = static_cast<std::size_t>(r);
    j.launch(test_call(kind::all_reduce, 0), r, pointers(out.dense[at]));
    j.launch(first, r, {&out.first_rows[at]},
             [&dense, p = static_cast<std::size_t>(r / local)](const collective_span& span, bool) {
               if (span.dense_fallback) dense[p].store(true);
             });
    j.launch(test_call(kind::all_reduce, 2), r, {&out.dense[at][1]});
    j.launch(second, r, {&out.second_rows[at]});
  }
  for (auto ok : j.sync_all(20000)) EXPECT_EQ(ok, true) << backend;
  for (const auto& d : dense) out.first_dense.push_back(d.load());
  return out;
}

class ShmAllGather : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(ShmAllGather, SparseRowsAmongDenseCollectivesGiveTheCafBackendsBits) {
  const auto [processes, local] = GetParam();
  for (sparse_exchange mode : {sparse_exchange::sparse, sparse_exchange::dense, sparse_exchange::automatic}) {
    const mixed_run shm = run_mixed("shm", processes, local, mode), caf = run_mixed("caf", processes, local, mode);
    ASSERT_EQ(shm.first_rows.size(), caf.first_rows.size());
    for (int p = 0; p < processes; ++p) {
      const auto at = static_cast<std::size_t>(p);
      EXPECT_EQ(shm.first_dense[at], caf.first_dense[at]) << "process " << p;
      EXPECT_EQ(shm.first_dense[at], mode == sparse_exchange::dense ||
                                         (mode == sparse_exchange::automatic && processes * local == 6))
          << "process " << p << ": the span says whether the rows went densely";
    }
    for (std::size_t r = 0; r < shm.first_rows.size(); ++r) {
      for (const auto* pair : {&shm.first_rows, &shm.second_rows}) {
        const tensor& got = (*pair)[r];
        const tensor& want = (pair == &shm.first_rows ? caf.first_rows : caf.second_rows)[r];
        ASSERT_NE(got.sparse_rows(), nullptr) << "rank " << r;
        EXPECT_EQ(got.sparse_rows()->rows(), want.sparse_rows()->rows()) << "rank " << r;
        EXPECT_TRUE(bit_identical(got, want)) << "rank " << r;
      }
      // The caf backend sums 3 processes' large buffers around its ring (in ring order), the
      // shm one in process order: equal bits across 2 processes, equal within rounding across 3.
      for (std::size_t v = 0; v < shm.dense[r].size(); ++v) {
        EXPECT_TRUE(bit_identical(shm.dense[r][v], shm.dense[0][v])) << "rank " << r << " var " << v;
        if (processes == 2) EXPECT_TRUE(bit_identical(shm.dense[r][v], caf.dense[r][v])) << "rank " << r << " var " << v;
        else EXPECT_LT(relative_difference(shm.dense[r][v], caf.dense[r][v]), 1e-6) << "rank " << r << " var " << v;
      }
    }
    // Every rank's second gather holds every rank's rows, not its own alone.
    EXPECT_EQ(shm.second_rows[0].shape()[0], caf.second_rows[0].shape()[0]);
    EXPECT_GT(shm.second_rows[0].shape()[0], rank_rows(processes * local - 1).shape()[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ShmAllGather,
                         ::testing::Values(std::pair{2, 1}, std::pair{2, 2}, std::pair{3, 2}),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

TEST(AutoBackend, IsTheDefaultAndChoosesSharedMemoryOnOneHost) {
  EXPECT_EQ(std::string(default_process_backend), "auto");
  EXPECT_EQ(process_group_options{}.collective_backend, "auto");
  backend_job j(2, 2, "auto");
  for (auto& c : j.comms) EXPECT_NE(dynamic_cast<shm_communicator*>(c.get()), nullptr);
  auto values = random_buffers(j.world(), 9);
  const auto expected = single_process(test_call(kind::all_reduce, 0), clone_all(values));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (auto ok : j.sync_all(20000)) ASSERT_EQ(ok, true);
  for (int r = 0; r < j.world(); ++r)
    for (std::size_t v = 0; v < values[r].size(); ++v)
      EXPECT_LT(relative_difference(values[r][v], expected[r][v]), 1e-6) << "rank " << r << " var " << v;
}

/// Process rank 0 of a 2-process job by hand, over `group`: offers a segment name that does
/// not exist, as a rank 0 on another host would, and returns what rank 1 said.
std::string offer_a_name_nobody_has(process_group& group) {
  byte_buffer offer(16, 7);
  const std::string name = "/pe-actor-shm-test-no-such-segment";
  offer.insert(offer.end(), name.begin(), name.end());
  group.all_gather(offer);
  const auto outcomes = group.all_gather({});
  return std::string(outcomes.at(1).begin(), outcomes.at(1).end());
}

TEST(AutoBackend, FallsBackToCafOnEveryProcessWhenOneCannotMapTheSegment) {
  loopback_network network(2);
  process_group rank0(network.transport(0)), rank1(network.transport(1));
  auto said = std::async(std::launch::async, [&] { return offer_a_name_nobody_has(rank0); });
  const shm_joined joined = shm_segment::try_join(rank1, 4096);
  EXPECT_FALSE(joined.segment.has_value());
  EXPECT_NE(joined.failure.find("process rank 1: cannot open the shared memory segment "
                                "/pe-actor-shm-test-no-such-segment"),
            std::string::npos)
      << joined.failure;
  EXPECT_NE(said.get().find("needs every process of the job on one host"), std::string::npos);
  // The whole backend: rank 0 warns once, and both make the caf backend's communicator.
  std::vector<std::string> warnings;
  process_group_options options;
  options.on_warning = [&](const std::string& text) { warnings.push_back(text); };
  loopback_network again(2);
  process_group a(again.transport(0), 0, std::chrono::seconds(30), options), b(again.transport(1));
  // Rank 1 refuses whatever rank 0 offers by reporting a failure of its own: what a process
  // that cannot open the name sends.
  auto refusing = std::async(std::launch::async, [&] {
    b.all_gather({});
    const std::string no = "cannot open it here";
    b.all_gather(byte_buffer(no.begin(), no.end()));
    return b.make_communicator(1, find_process_backend("caf"));
  });
  auto made = a.make_communicator(1, find_process_backend("auto"));
  auto theirs = refusing.get();
  EXPECT_NE(dynamic_cast<net_communicator*>(made.get()), nullptr) << "auto fell back to caf";
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("not shared memory: process rank 1: cannot open it here"), std::string::npos)
      << warnings[0];
  EXPECT_EQ(own_segments(), 0) << "rank 0 removed its segment's name";
  made->abort();
  theirs->abort();
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

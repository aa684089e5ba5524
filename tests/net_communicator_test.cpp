// Collectives across processes (net_communicator over in-memory transports): results equal
// to one process over the same places within fp32 grouping, bit-identical on every rank;
// a peer that disagrees, fails, is lost or lies fails the collective everywhere, naming it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <utility>
#include <random>
#include <thread>
#include <vector>

#include "collectives/cpu/inproc_communicator.hpp"
#include "collectives/dense_rows.hpp"
#include "collectives/net/net_communicator.hpp"
#include "collectives/net/net_packet.hpp"
#include "collectives/net/row_payload.hpp"
#include "collectives/net/tensor_bytes.hpp"
#include "core/selected_rows.hpp"
#include "devices/device.hpp"
#include "support/collective_calls.hpp"
#include "support/collective_job.hpp"
#include "support/collective_values.hpp"
#include "support/loopback_transport.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;
using kind = collective_call::kind;
using pe::testing::test_call;
using namespace pe::testing;

/// `processes` x `local` CPU places, one net_communicator per process.
struct job : collective_job {
  job(int processes, int local, std::size_t ring_bytes = net_communicator::default_ring_bytes)
      : collective_job(processes, local), network(processes) {
    for (int p = 0; p < processes; ++p) {
      transports.push_back(network.transport(p));
      comms.push_back(std::make_unique<net_communicator>(*transports.back(), 1, local, ring_bytes));
    }
  }
  ~job() {
    // The communicators before the transports they use.
    for (auto& c : comms) c->abort();
    for (auto& d : devices) d->stop();
    comms.clear();
  }

  pe::testing::loopback_network network;
  std::vector<std::unique_ptr<net_transport>> transports;
};

struct shape_case {
  int processes;
  int local;
  /// The ring's threshold: the 4.4 MB variable goes around the ring from 3 processes on by
  /// default; 0 sends even 1-float payloads around it (empty chunks included).
  std::size_t ring_bytes = net_communicator::default_ring_bytes;
};

/// Test names in ctest: "3x2 ring from 0 bytes", not the case's bytes.
void PrintTo(const shape_case& c, std::ostream* os) {
  *os << c.processes << "x" << c.local << " ring from " << c.ring_bytes << " bytes";
}

class NetCollective : public ::testing::TestWithParam<shape_case> {};

TEST_P(NetCollective, AllReduceEqualsOneProcessAndIsIdenticalOnEveryRank) {
  const auto [processes, local, ring_bytes] = GetParam();
  job j(processes, local, ring_bytes);
  auto values = random_buffers(j.world(), 7);
  const auto expected = single_process(test_call(kind::all_reduce, 0), clone_all(values));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::all_reduce, 1), r, {&values[r][0]});
  for (auto ok : j.sync_all()) ASSERT_EQ(ok, true);
  for (int r = 0; r < j.world(); ++r) {
    for (std::size_t v = 1; v < values[r].size(); ++v) {
      // fp32 sums grouped per process differ from the flat sum by a few ulps of the partial
      // sums: 1e-6 relative to max(1, |sum|) for a handful of terms in [-1, 1].
      EXPECT_LT(relative_difference(values[r][v], expected[r][v]), 1e-6) << "rank " << r << " var " << v;
      EXPECT_TRUE(bit_identical(values[r][v], values[0][v])) << "rank " << r << " var " << v;
    }
  }
  // Variable 0 was reduced twice: world x the first sum.
  EXPECT_NEAR(values[0][0].values<float>()[0], expected[0][0].values<float>()[0] * j.world(), 1e-4);
}

TEST_P(NetCollective, ReduceAndBroadcastWithRootsOnEveryProcess) {
  const auto [processes, local, ring_bytes] = GetParam();
  for (int root = 0; root < processes * local; ++root) {
    job j(processes, local, ring_bytes);
    auto values = random_buffers(j.world(), 11 + root);
    const auto reduced = single_process(test_call(kind::reduce, 0, root), clone_all(values));
    for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::reduce, 0, root), r, pointers(values[r]));
    // Then the root's result goes to everyone, as reduce mode does with parameters.
    for (int r = 0; r < j.world(); ++r) j.launch(test_call(kind::broadcast, 1, root), r, pointers(values[r]));
    for (auto ok : j.sync_all()) ASSERT_EQ(ok, true);
    for (int r = 0; r < j.world(); ++r)
      for (std::size_t v = 0; v < values[r].size(); ++v) {
        EXPECT_LT(relative_difference(values[r][v], reduced[root][v]), 1e-6) << "root " << root;
        EXPECT_TRUE(bit_identical(values[r][v], values[root][v])) << "root " << root << " rank " << r;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, NetCollective,
                         ::testing::Values(shape_case{2, 1}, shape_case{2, 2}, shape_case{3, 1},
                                           shape_case{4, 1, 0}, shape_case{3, 2, 0}),
                         [](const auto& info) {
                           return std::to_string(info.param.processes) + "x" + std::to_string(info.param.local) +
                                  (info.param.ring_bytes == 0 ? "AllOnTheRing" : "");
                         });

TEST(NetCollectiveFaults, AFailureOnTheRingReachesEveryProcess) {
  job j(3, 1, 0);
  auto values = random_buffers(3, 5);
  j.on(1).enqueue([] { throw error("kernel on rank 1 failed"); });
  for (int r = 0; r < 3; ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (auto ok : j.sync_all()) EXPECT_EQ(ok, false);
  for (int r : {0, 2})
    EXPECT_NE(j.error(r).find("process rank 1 failed: skipped after an earlier failure"), std::string::npos)
        << j.error(r);
}

TEST(NetCollectiveFaults, ProcessesThatRunDifferentCollectivesFailNamingTheProcess) {
  job j(2, 1);
  auto values = random_buffers(2, 3);
  j.launch(test_call(kind::all_reduce, 0), 0, pointers(values[0]));
  j.launch(test_call(kind::reduce, 0, 1), 1, pointers(values[1]));
  auto ok = j.sync_all();
  EXPECT_EQ(ok[1], false);
  EXPECT_NE(j.error(1).find("process rank 0 ran collective #0 as all_reduce"), std::string::npos) << j.error(1);
}

TEST(NetCollectiveFaults, DifferentSizesFailNamingTheProcess) {
  job j(2, 1);
  auto a = tensor::from_vector(std::vector<float>(10, 1.f), {10});
  auto b = tensor::from_vector(std::vector<float>(12, 1.f), {12});
  j.launch(test_call(kind::all_reduce, 0), 0, {&a});
  j.launch(test_call(kind::all_reduce, 0), 1, {&b});
  for (auto ok : j.sync_all()) EXPECT_EQ(ok, false);
  // Whichever process checks first names the other; the other learns it from that one.
  const std::string e = j.error(0);
  EXPECT_TRUE(e.find("process rank 1 sent 48 bytes (12 FP32 values) for collective #0 test#0 where this process "
                     "has 40 bytes (10 FP32 values)") != std::string::npos ||
              e.find("process rank 1 failed: process rank 0 sent 40 bytes (10 FP32 values) for collective #0 test#0 "
                     "where this process has 48 bytes (12 FP32 values)") != std::string::npos)
      << e;
}

TEST(NetCollectiveFaults, ProcessesThatReduceDifferentVariablesFailNamingBoth) {
  // Same kind, root and size: only the variable differs. Without the label in every packet
  // the processes would sum each other's unrelated gradients.
  job j(2, 1);
  auto values = random_buffers(2, 3);
  collective_call first = test_call(kind::all_reduce, 0), second = test_call(kind::all_reduce, 0);
  first.label = "all_reduce(fc_0.w_0@GRAD)";
  second.label = "all_reduce(fc_0.b_0@GRAD)";
  j.launch(first, 0, pointers(values[0]));
  j.launch(second, 1, pointers(values[1]));
  for (auto ok : j.sync_all()) EXPECT_EQ(ok, false);
  for (int r = 0; r < 2; ++r) {
    const std::string e = j.error(r);
    EXPECT_NE(e.find("ran collective #0 as all_reduce all_reduce(fc_0."), std::string::npos) << e;
    EXPECT_NE(e.find("all_reduce(fc_0.w_0@GRAD)"), std::string::npos) << e;
    EXPECT_NE(e.find("all_reduce(fc_0.b_0@GRAD)"), std::string::npos) << e;
  }
}

TEST(NetCollectiveFaults, AFailedStreamOnOneProcessFailsTheOthersInsteadOfHanging) {
  job j(2, 2);
  auto values = random_buffers(4, 5);
  j.on(2).enqueue([] { throw error("kernel on rank 2 failed"); });
  for (int r = 0; r < 4; ++r) j.launch(test_call(kind::all_reduce, 0), r, pointers(values[r]));
  for (auto ok : j.sync_all()) EXPECT_EQ(ok, false);
  EXPECT_NE(j.error(0).find("process rank 1 failed: skipped after an earlier failure"), std::string::npos)
      << j.error(0);
}

TEST(NetCollectiveFaults, ALostPeerFailsTheWaitingRanks) {
  job j(2, 1);
  auto values = random_buffers(2, 9);
  j.launch(test_call(kind::all_reduce, 0), 0, pointers(values[0])); // rank 1 never comes
  j.network.inbox(0).fail("lost process rank 1: test");
  auto ok = j.sync_all();
  EXPECT_EQ(ok[0], false);
  EXPECT_NE(j.error(0).find("lost process rank 1"), std::string::npos) << j.error(0);
}

TEST(NetCollectiveFaults, AbortReleasesAWaitingRank) {
  job j(2, 1);
  auto values = random_buffers(2, 9);
  j.launch(test_call(kind::all_reduce, 0), 0, pointers(values[0]));
  j.comms[0]->abort();
  EXPECT_EQ(j.sync_all()[0], false);
  EXPECT_NE(j.error(0).find("aborted"), std::string::npos) << j.error(0);
}

// --- all_gather of SELECTED_ROWS (sparse gradients) ------------------------------------

class NetAllGather : public ::testing::TestWithParam<shape_case> {};

/// All_gather #0 with exchange `mode`.
collective_call gather_call(sparse_exchange mode) {
  collective_call c = test_call(kind::all_gather, 0);
  c.exchange = mode;
  return c;
}

TEST_P(NetAllGather, EveryRankGetsEveryRanksRowsInGlobalRankOrder) {
  const auto [processes, local, ring_bytes] = GetParam();
  job j(processes, local, ring_bytes);
  std::vector<tensor> grads;
  for (int r = 0; r < j.world(); ++r) grads.push_back(rank_rows(r));
  std::vector<const tensor*> all;
  for (const tensor& g : grads) all.push_back(&g);
  const tensor expected = concat_selected_rows(all, place::cpu(0)).clone();
  for (int r = 0; r < j.world(); ++r) j.launch(gather_call(sparse_exchange::sparse), r, {&grads[static_cast<std::size_t>(r)]});
  for (auto ok : j.sync_all()) ASSERT_EQ(ok, true);
  for (int r = 0; r < j.world(); ++r) {
    const tensor& g = grads[static_cast<std::size_t>(r)];
    ASSERT_NE(g.sparse_rows(), nullptr) << "rank " << r;
    EXPECT_EQ(g.sparse_rows()->rows(), expected.sparse_rows()->rows()) << "rank " << r;
    EXPECT_EQ(g.shape(), expected.shape());
    EXPECT_TRUE(bit_identical(g, expected)) << "rank " << r;
  }
}

/// `processes` x `local` ranks' rank_rows through an all_gather of exchange `mode`: every
/// rank's result, and whether the collective's span (of every process) said dense.
std::pair<std::vector<tensor>, std::vector<bool>> net_gather(const shape_case& c, sparse_exchange mode) {
  job j(c.processes, c.local, c.ring_bytes);
  std::vector<tensor> grads;
  for (int r = 0; r < j.world(); ++r) grads.push_back(rank_rows(r));
  // Written by the device threads that finish the collective (several per process with
  // local places): atomics, not std::vector<bool>'s shared words.
  std::vector<std::atomic<bool>> dense(static_cast<std::size_t>(c.processes));
  for (int r = 0; r < j.world(); ++r)
    j.launch(gather_call(mode), r, {&grads[static_cast<std::size_t>(r)]},
             [&dense, p = r / c.local](const collective_span& span, bool) {
               dense[static_cast<std::size_t>(p)].store(span.dense_fallback);
             });
  for (auto ok : j.sync_all()) EXPECT_EQ(ok, true);
  std::vector<bool> said;
  for (const auto& d : dense) said.push_back(d.load());
  return {grads, said};
}

TEST_P(NetAllGather, TheDenseFallbackGivesEveryRankTheTouchedRowsSummedIdentically) {
  const shape_case c = GetParam();
  // What one process's dense gather of every rank's rows gives (sums grouped by rank there,
  // by process here: equal within rounding), and the sparse gather's merged sums.
  std::vector<tensor> one;
  for (int r = 0; r < c.processes * c.local; ++r) one.push_back(rank_rows(r));
  tensor table = dense_rows_table(10, 2, place::cpu(0));
  for (const tensor& g : one) add_rows_densely(g, table);
  const tensor expected = touched_rows(table, place::cpu(0));
  // 3 x 2 ranks bring 12 rows, 192 bytes gathered against a table of 120 bytes: auto is dense
  // there; 2 x 1 bring 3 rows (48 bytes): auto gathers.
  const bool auto_dense = c.processes * c.local == 6;
  for (sparse_exchange mode : {sparse_exchange::dense, sparse_exchange::automatic}) {
    const auto [grads, dense] = net_gather(c, mode);
    const bool want_dense = mode == sparse_exchange::dense || auto_dense;
    for (int p = 0; p < c.processes; ++p) EXPECT_EQ(dense[static_cast<std::size_t>(p)], want_dense) << "process " << p;
    if (!want_dense) continue;
    for (int r = 0; r < static_cast<int>(grads.size()); ++r) {
      const tensor& g = grads[static_cast<std::size_t>(r)];
      ASSERT_NE(g.sparse_rows(), nullptr) << "rank " << r;
      EXPECT_EQ(g.sparse_rows()->rows(), expected.sparse_rows()->rows()) << "rank " << r;
      EXPECT_TRUE(bit_identical(g, grads[0])) << "rank " << r;
      const auto got = g.values<float>(), want = expected.values<float>();
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "rank " << r << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, NetAllGather,
                         ::testing::Values(shape_case{2, 1}, shape_case{2, 2}, shape_case{3, 2}, shape_case{3, 2, 0}),
                         [](const auto& info) {
                           return std::to_string(info.param.processes) + "x" + std::to_string(info.param.local) +
                                  (info.param.ring_bytes == 0 ? "_ring" : "");
                         });

/// A packet header from process 1 (not a communicator here) for step `step` of all_gather #0.
net_packet peer_header(std::uint64_t step) {
  net_packet header;
  header.channel = 1;
  header.sequence = step; // wire(0, step)
  header.from = 1;
  header.kind = static_cast<std::int32_t>(kind::all_gather);
  header.root = 0;
  header.label = test_call(kind::all_gather, 0).label;
  return header;
}

/// Process 0's error when process 1 announces `counts` (INT64 [1, 3]: rows, width, height; by
/// default what it then sends) and sends `rows`, `values` and `height` as its part of a
/// gathering all_gather #0.
std::string error_when_peer_sends(const tensor& rows, const tensor& values, const tensor& height,
                                  std::optional<tensor> counts = std::nullopt) {
  job j(2, 1);
  tensor mine = rank_rows(0);
  j.launch(gather_call(sparse_exchange::sparse), 0, {&mine});
  if (!counts)
    counts = tensor::from_vector<std::int64_t>({rows.numel(), values.dim(1), height.data<std::int64_t>()[0]}, {1, 3});
  for (auto& packet : split_payload(peer_header(0), encode_tensors({&*counts})))
    j.network.inbox(0).deliver(std::move(packet));
  for (auto& packet : split_payload(peer_header(1), encode_tensors({&rows, &values, &height})))
    j.network.inbox(0).deliver(std::move(packet));
  const auto done = j.on(0).synchronize_for(std::chrono::milliseconds(5000));
  EXPECT_TRUE(done.has_value()) << "process 0 hangs";
  EXPECT_FALSE(done.value_or(true));
  return j.error(0);
}

TEST(NetAllGatherFaults, APeerThatLiesAboutItsRowsIsRefusedNamingIt) {
  const tensor height = tensor::from_vector<std::int64_t>({10}, {1});
  const tensor two_rows = tensor::from_vector<std::int64_t>({1, 4}, {2});
  std::string e = error_when_peer_sends(two_rows, tensor::zeros(dtype::fp32, {3, 2}), height);
  EXPECT_NE(e.find("process rank 1's buffer 0 claims 2 rows but sent values for 3"), std::string::npos) << e;
  e = error_when_peer_sends(tensor::from_vector<std::int64_t>({1, 12}, {2}), tensor::zeros(dtype::fp32, {2, 2}), height);
  EXPECT_NE(e.find("process rank 1's buffer 0: row 12 (entry 1) is outside the table's rows [0, 10)"), std::string::npos) << e;
  const tensor width_2 = tensor::from_vector<std::int64_t>({2, 2, 10}, {1, 3});
  e = error_when_peer_sends(two_rows, tensor::zeros(dtype::fp32, {2, 3}), height, width_2);
  EXPECT_NE(e.find("process rank 1's buffer 0 has rows of width 3 in a table of 10 rows, this process width 2"),
            std::string::npos) << e;
  e = error_when_peer_sends(two_rows, tensor::zeros(dtype::fp32, {2, 2}), tensor::from_vector<std::int64_t>({11}, {1}), width_2);
  EXPECT_NE(e.find("in a table of 11 rows, this process width 2 and 10 rows"), std::string::npos) << e;
}

TEST(NetAllGatherFaults, APeerWhoseAnnouncedRowCountsLieIsRefusedNamingIt) {
  const tensor height = tensor::from_vector<std::int64_t>({10}, {1});
  const tensor two_rows = tensor::from_vector<std::int64_t>({1, 4}, {2});
  const tensor values = tensor::zeros(dtype::fp32, {2, 2});
  // What every process chooses from: the counts must be what the rows turn out to be.
  std::string e = error_when_peer_sends(two_rows, values, height, tensor::from_vector<std::int64_t>({1, 2, 10}, {1, 3}));
  EXPECT_NE(e.find("process rank 1 announced 1 rows of buffer 0 but sent 2"), std::string::npos) << e;
  e = error_when_peer_sends(two_rows, values, height, tensor::from_vector<std::int64_t>({2, 3, 10}, {1, 3}));
  EXPECT_NE(e.find("process rank 1's buffer 0 has rows of width 3 in a table of 10 rows, this process width 2"),
            std::string::npos) << e;
  e = error_when_peer_sends(two_rows, values, height, tensor::from_vector<std::int64_t>({-5, 2, 10}, {1, 3}));
  EXPECT_NE(e.find("process rank 1's buffer 0 announces -5 rows"), std::string::npos) << e;
  e = error_when_peer_sends(two_rows, values, height, tensor::from_vector<std::int64_t>({2, 2}, {2}));
  EXPECT_NE(e.find("process rank 1 announced its row counts as something other than INT64 [1, 3]"), std::string::npos) << e;
}

/// `tensors` as process 1's payload for step `step` of all_gather #0, delivered to process 0.
void deliver_from_peer(job& j, std::uint64_t step, const std::vector<const tensor*>& tensors) {
  for (auto& packet : split_payload(peer_header(step), encode_tensors(tensors)))
    j.network.inbox(0).deliver(std::move(packet));
}

/// Rank r's counts tensor (INT64 [1, 3]) as encode_row_counts announces them.
tensor counts_of(const tensor& rows_value) {
  return tensor::from_vector<std::int64_t>({rows_value.dim(0), rows_value.dim(1), rows_value.sparse_rows()->height()},
                                           {1, 3});
}

TEST(NetAllGatherEarlyRows, APeerThatSendsItsRowsWithItsCountsSendsNothingMore) {
  job j(2, 1);
  tensor mine = rank_rows(0);
  j.launch(gather_call(sparse_exchange::automatic), 0, {&mine});
  const tensor theirs = rank_rows(1);
  const tensor counts = counts_of(theirs);
  const tensor rows = tensor::from_vector(theirs.sparse_rows()->rows(), {theirs.dim(0)});
  const tensor height = tensor::from_vector<std::int64_t>({10}, {1});
  deliver_from_peer(j, 0, {&counts, &rows, &theirs, &height}); // step 0 only
  const auto done = j.on(0).synchronize_for(std::chrono::milliseconds(5000));
  ASSERT_TRUE(done.has_value()) << "process 0 waits for rows it already has";
  ASSERT_TRUE(*done) << j.error(0);
  const tensor r0 = rank_rows(0);
  const tensor expected = concat_selected_rows({&r0, &theirs}, place::cpu(0));
  EXPECT_EQ(mine.sparse_rows()->rows(), expected.sparse_rows()->rows());
  EXPECT_TRUE(bit_identical(mine, expected));
  // Process 0 expected the gather too (2 rows against a table of 10): its rows went with its
  // counts, and nothing followed at step 1.
  auto sent = j.network.inbox(1).take(1, 0, 0);
  ASSERT_TRUE(sent.has_value());
  tensor like_mine = rank_rows(0);
  const announced_rows a = decode_row_counts(sent->bytes, {&like_mine}, "process rank 0");
  ASSERT_TRUE(a.rows.has_value());
  EXPECT_EQ(a.counts, std::vector<std::int64_t>{1});
  EXPECT_TRUE(bit_identical((*a.rows)[0], r0));
  EXPECT_FALSE(j.network.inbox(1).take(1, 1, 0).has_value());
}

TEST(NetAllGatherEarlyRows, AProcessSendsNoRowsWithItsCountsWhenTheExchangeIsDense) {
  job j(2, 1);
  tensor mine = rank_rows(0);
  j.launch(gather_call(sparse_exchange::dense), 0, {&mine});
  std::optional<net_payload> sent;
  for (int i = 0; i < 500 && !sent; ++i) {
    sent = j.network.inbox(1).take(1, 0, 0);
    if (!sent) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(sent.has_value()) << "process 0 announced nothing";
  tensor like_mine = rank_rows(0);
  EXPECT_FALSE(decode_row_counts(sent->bytes, {&like_mine}, "process rank 0").rows.has_value());
}

TEST(NetAllGatherEarlyRows, EarlyRowsThatDisagreeWithTheirCountsAreRefusedNamingThePeer) {
  job j(2, 1);
  tensor mine = rank_rows(0);
  j.launch(gather_call(sparse_exchange::sparse), 0, {&mine});
  const tensor theirs = rank_rows(1); // 2 rows
  const tensor one_row = tensor::from_vector<std::int64_t>({1, 2, 10}, {1, 3});
  const tensor rows = tensor::from_vector(theirs.sparse_rows()->rows(), {theirs.dim(0)});
  const tensor height = tensor::from_vector<std::int64_t>({10}, {1});
  deliver_from_peer(j, 0, {&one_row, &rows, &theirs, &height});
  const auto done = j.on(0).synchronize_for(std::chrono::milliseconds(5000));
  ASSERT_TRUE(done.has_value()) << "process 0 hangs";
  EXPECT_FALSE(*done);
  EXPECT_NE(j.error(0).find("process rank 1 announced 1 rows of buffer 0 but sent 2"), std::string::npos) << j.error(0);
  // Counts followed by something that is not a buffer's rows: refused as well.
  job k(2, 1);
  tensor mine_k = rank_rows(0);
  k.launch(gather_call(sparse_exchange::sparse), 0, {&mine_k});
  const tensor counts = counts_of(theirs);
  deliver_from_peer(k, 0, {&counts, &rows});
  ASSERT_TRUE(k.on(0).synchronize_for(std::chrono::milliseconds(5000)).has_value()) << "process 0 hangs";
  EXPECT_NE(k.error(0).find("optionally followed by its rows"), std::string::npos) << k.error(0);
}

} // namespace

// Processes meeting through CAF networking (two process groups inside this test process, on
// 127.0.0.1): host exchanges, refusal of a mismatched process, a lost peer, a master that never
// comes; and the checks on everything a peer sends (packets, tensor messages).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>
#include <vector>


#include "collectives/net/net_inbox.hpp"
#include "collectives/net/process_group.hpp"
#include "collectives/net/tensor_bytes.hpp"
#include "support/expect_error.hpp"
#include "support/free_port.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;
using pe::testing::expect_error;
using pe::testing::free_port;

process_group_options options(int rank, int size, int port,
                              std::vector<std::pair<std::string, std::string>> fingerprint = {{"program", "a"}}) {
  process_group_options o;
  o.rank = rank;
  o.size = size;
  o.master_port = port;
  o.peer_timeout = 2s;
  o.join_timeout = 10s;
  o.fingerprint = std::move(fingerprint);
  return o;
}

/// Every rank joined concurrently, as separate processes would.
std::vector<std::unique_ptr<process_group>> join_all(int size) {
  const int port = free_port();
  std::vector<std::future<std::unique_ptr<process_group>>> joining;
  for (int r = 0; r < size; ++r)
    joining.push_back(std::async(std::launch::async, [=] { return join_processes(options(r, size, port)); }));
  std::vector<std::unique_ptr<process_group>> groups;
  for (auto& j : joining) groups.push_back(j.get());
  return groups;
}

byte_buffer bytes(const std::string& s) {
  return bytes_of(s.data(), s.size());
}

TEST(ProcessGroup, ThreeProcessesGatherAndBroadcast) {
  auto groups = join_all(3);
  std::vector<std::future<std::vector<byte_buffer>>> gathered;
  for (auto& g : groups)
    gathered.push_back(std::async(std::launch::async, [&g] {
      return g->all_gather(bytes("rank " + std::to_string(g->rank())));
    }));
  for (auto& f : gathered)
    EXPECT_EQ(f.get(), (std::vector<byte_buffer>{bytes("rank 0"), bytes("rank 1"), bytes("rank 2")}));

  const tensor big = tensor::from_vector(std::vector<float>(3'000'000, 0.25f), {1000, 3000}); // 3 packets
  std::vector<std::future<std::vector<tensor>>> sent;
  for (auto& g : groups)
    sent.push_back(std::async(std::launch::async, [&g, &big] { return g->broadcast_tensors({&big}, 1); }));
  for (auto& f : sent) {
    auto got = f.get();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].shape(), big.shape());
    EXPECT_EQ(got[0].values<float>()[2'999'999], 0.25f);
  }
  for (auto& g : groups) EXPECT_EQ(g->size(), 3);
}

TEST(ProcessGroup, AGatherThatWaitsSaysForWhomEveryInterval) {
  // Rank 1 joins the gather 450 ms late: rank 0's watch hears of rank 1 every 100 ms until
  // it comes, and the gather then completes as usual. A watch that throws ends the wait.
  auto groups = join_all(2);
  std::vector<std::pair<int, std::chrono::milliseconds>> heard;
  auto late = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(450ms);
    return groups[1]->all_gather(bytes("one"));
  });
  const auto got = groups[0]->all_gather(
      bytes("zero"), [&](int rank, std::chrono::milliseconds waited) { heard.emplace_back(rank, waited); }, 100ms);
  EXPECT_EQ(got, (std::vector<byte_buffer>{bytes("zero"), bytes("one")}));
  EXPECT_EQ(late.get(), got);
  ASSERT_GE(heard.size(), 3u);
  for (std::size_t k = 0; k < heard.size(); ++k) {
    EXPECT_EQ(heard[k].first, 1);
    EXPECT_EQ(heard[k].second, 100ms * static_cast<int>(k + 1));
  }
  auto late_again = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(300ms);
    return groups[1]->all_gather(bytes("one"));
  });
  expect_error([&] {
    groups[0]->all_gather(bytes("zero"), [](int rank, std::chrono::milliseconds) {
      throw error("gave up on rank " + std::to_string(rank));
    }, 50ms);
  }, {"gave up on rank 1"});
  late_again.get(); // rank 1's own gather completes: rank 0's part was sent before it gave up
}

TEST(ProcessGroup, AMismatchedFingerprintIsRefusedOnBothSides) {
  const int port = free_port();
  auto master = std::async(std::launch::async, [=] { return join_processes(options(0, 2, port)); });
  auto other = std::async(std::launch::async, [=] {
    return join_processes(options(1, 2, port, {{"program", "b"}}));
  });
  expect_error([&] { other.get(); }, {"the master refused this process", "program: b there, a on rank 0"});
  expect_error([&] { master.get(); }, {"process rank 1 differs from rank 0 in program"});
}

TEST(ProcessGroup, ALostPeerFailsTheExchangeNamingIt) {
  auto groups = join_all(2);
  groups[1].reset(); // the process goes away
  expect_error([&] { groups[0]->all_gather(bytes("x")); }, {"lost process rank 1"});
}

TEST(ProcessGroup, NoMasterMeansAClearErrorAfterTheJoinTimeout) {
  auto o = options(1, 2, free_port());
  o.join_timeout = 500ms;
  expect_error([&] { join_processes(o); }, {"cannot reach the master at 127.0.0.1:"});
}

TEST(ProcessGroup, BadRanksAreRefusedBeforeAnyNetworking) {
  expect_error([] { join_processes(options(2, 2, 1)); }, {"rank 2 outside a job of 2"});
  expect_error([] { join_processes(options(0, 1, 1)); }, {"a job of 1 processes"});
}

// --- what a peer sends ---------------------------------------------------------------

net_packet packet(int from, std::uint64_t sequence, std::uint64_t offset, std::uint64_t total,
                  std::size_t size) {
  net_packet p;
  p.from = from;
  p.sequence = sequence;
  p.channel = 1;
  p.offset = offset;
  p.total = total;
  p.bytes.assign(size, 'x');
  return p;
}

TEST(NetInbox, AssemblesPacketsInAnyOrder) {
  net_inbox in(0, 2);
  in.deliver(packet(1, 5, 4, 10, 6));
  EXPECT_FALSE(in.take(1, 5, 1).has_value());
  in.deliver(packet(1, 5, 0, 10, 4));
  auto got = in.take(1, 5, 1);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->bytes.size(), 10u);
}

struct lie {
  const char* name;
  std::vector<net_packet> packets;
  const char* message;
};

class NetInboxLies : public ::testing::TestWithParam<lie> {};

TEST_P(NetInboxLies, BreakTheInboxNamingThePeer) {
  net_inbox in(0, 3);
  for (auto p : GetParam().packets) in.deliver(std::move(p));
  ASSERT_TRUE(in.broken().has_value());
  EXPECT_NE(in.broken()->find(GetParam().message), std::string::npos) << *in.broken();
  expect_error([&] { in.take(1, 5, 1); }, {GetParam().message});
}

INSTANTIATE_TEST_SUITE_P(
    Lies, NetInboxLies,
    ::testing::Values(
        lie{"ClaimsThisRank", {packet(0, 1, 0, 4, 4)}, "claims to come from process rank 0"},
        lie{"ClaimsARankOutsideTheJob", {packet(7, 1, 0, 4, 4)}, "claims to come from process rank 7"},
        lie{"BytesBeyondTheTotal", {packet(1, 1, 8, 10, 4)}, "sent bytes [8, 12) of a 10-byte payload"},
        lie{"OffsetBeyondTheTotal", {packet(2, 1, 1ULL << 62, 10, 1)}, "of a 10-byte payload"},
        lie{"OverlappingPieces", {packet(1, 1, 0, 10, 4), packet(1, 1, 2, 10, 4)}, "twice"},
        lie{"MoreBytesThanThePayload", {packet(1, 1, 0, 10, 6), packet(1, 1, 4, 10, 6)}, "sent more than the 10 bytes"},
        lie{"TotalsDisagree", {packet(1, 1, 0, 10, 4), packet(1, 1, 4, 12, 4)}, "disagree on the payload's size"},
        lie{"AnEmptyPacketOfAPayload", {packet(1, 1, 0, 10, 0)}, "an empty packet"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(NetInbox, APacketOlderThanOneTakenIsOutOfOrder) {
  net_inbox in(0, 2);
  in.deliver(packet(1, 5, 0, 4, 4));
  ASSERT_TRUE(in.take(1, 5, 1).has_value());
  in.deliver(packet(1, 3, 0, 4, 4));
  ASSERT_TRUE(in.broken().has_value());
  EXPECT_NE(in.broken()->find("out of order"), std::string::npos) << *in.broken();
}

TEST(NetInbox, WaitingForAPayloadWhileAnOlderOneWasNeverTakenFails) {
  net_inbox in(0, 2);
  in.deliver(packet(1, 3, 0, 4, 4)); // the peer ran #3, this process skipped it
  expect_error([&] { in.take(1, 5, 1); },
               {"process rank 1 sent collective #3 of communicator 1, which this process never ran"});
  EXPECT_TRUE(in.broken().has_value());
}

TEST(NetInbox, APayloadTakenPacketByPacketCountsAsTaken) {
  net_inbox in(0, 2);
  in.deliver(packet(1, 5, 4, 10, 6));
  ASSERT_TRUE(in.header(1, 5, 1).has_value());
  EXPECT_EQ(in.header(1, 5, 1)->total, 10u);
  EXPECT_FALSE(in.take_piece(1, 5, 1, 0).has_value()); // not here yet
  EXPECT_EQ(in.take_piece(1, 5, 1, 4)->size(), 6u);
  in.deliver(packet(1, 5, 0, 10, 4));
  EXPECT_EQ(in.take_piece(1, 5, 1, 0)->size(), 4u);
  EXPECT_FALSE(in.header(1, 5, 1).has_value()); // taken whole
  in.deliver(packet(1, 5, 0, 10, 4));           // and now out of order
  EXPECT_TRUE(in.broken().has_value());
}

TEST(NetInbox, APeerWhoseBytesAllCameWithoutTheAwaitedOffsetLied) {
  net_inbox in(0, 2);
  in.deliver(packet(1, 5, 0, 8, 6));
  ASSERT_TRUE(in.take_piece(1, 5, 1, 0).has_value());
  in.deliver(packet(1, 5, 6, 8, 2)); // [6, 8) where the reader's packets end at 4
  expect_error([&] { in.take_piece(1, 5, 1, 4); }, {"process rank 1 sent all 8 bytes", "none at offset 4"});
}

// A piece already moved out still counts: sent again, it overlaps itself (a fuzz finding:
// the inbox forgot it and then held "all" the bytes with half of them missing).
TEST(NetInbox, APieceSentAgainAfterItWasTakenIsSentTwice) {
  net_inbox in(0, 2);
  in.deliver(packet(1, 5, 0, 8, 4));
  ASSERT_TRUE(in.take_piece(1, 5, 1, 0).has_value());
  in.deliver(packet(1, 5, 0, 8, 4)); // offset 0 again instead of 4
  ASSERT_TRUE(in.broken().has_value());
  EXPECT_NE(in.broken()->find("sent bytes at offset 0 of collective #5 of communicator 1"), std::string::npos) << *in.broken();
  EXPECT_NE(in.broken()->find("twice"), std::string::npos) << *in.broken();
}

TEST(NetInbox, APayloadBeingTakenInPiecesIsNotAlsoTakenWhole) {
  net_inbox in(0, 2);
  in.deliver(packet(1, 5, 0, 8, 4));
  ASSERT_TRUE(in.take_piece(1, 5, 1, 0).has_value());
  in.deliver(packet(1, 5, 4, 8, 4));
  expect_error([&] { in.take(1, 5, 1); }, {"is being taken packet by packet (4 of 8 bytes so far)"});
  EXPECT_EQ(in.take_piece(1, 5, 1, 4)->size(), 4u); // the piece reader still gets its rest
}

TEST(NetInbox, WaitTakeGivesUpAfterItsTimeout) {
  net_inbox in(0, 2);
  expect_error([&] { in.wait_take(0, 0, 1, 50ms); }, {"process rank 1 sent nothing for host exchange #0"});
}

// A finished peer's last payload can arrive just before the news that it exited (the job's
// closing barrier): what arrived complete is still taken; what is missing fails.
TEST(NetInbox, ACompletePayloadIsStillTakenAfterItsPeerIsLost) {
  net_inbox in(0, 3);
  in.deliver(packet(1, 0, 0, 4, 4));
  in.deliver(packet(2, 0, 0, 4, 2));
  in.fail("lost process rank 1: it exited");
  auto whole = in.wait_take(1, 0, 1, 50ms);
  EXPECT_EQ(whole.bytes.size(), 4u);
  expect_error([&] { in.wait_take(1, 0, 2, 50ms); }, {"lost process rank 1: it exited"});
  expect_error([&] { in.take(1, 1, 1); }, {"lost process rank 1: it exited"});
}

// ... or just after it, by another route: wait_take still waits briefly after a loss.
TEST(NetInbox, APayloadArrivingJustAfterTheLossIsStillTaken) {
  net_inbox in(0, 2);
  in.fail("lost process rank 1: it exited");
  auto late = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(50ms);
    in.deliver(packet(1, 0, 0, 4, 4));
  });
  EXPECT_EQ(in.wait_take(1, 0, 1, 5s).bytes.size(), 4u);
  late.get();
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { in.wait_take(1, 1, 1, 5s); }, {"lost process rank 1: it exited"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "the loss ends the wait, not the timeout";
  // A lie fails at once: no grace.
  net_inbox lied(0, 2);
  lied.deliver(packet(0, 0, 0, 4, 4)); // claims to come from this rank
  const auto lie_start = std::chrono::steady_clock::now();
  expect_error([&] { lied.wait_take(1, 0, 1, 5s); }, {"claims to come from process rank 0"});
  EXPECT_LT(std::chrono::steady_clock::now() - lie_start, net_inbox::loss_grace);
}

TEST(TensorBytes, RoundTripsEveryDtypeAndShape) {
  const tensor a = tensor::from_vector(std::vector<float>{1.5f, -2}, {2, 1});
  const tensor b = tensor::from_vector(std::vector<std::int64_t>{1LL << 40}, {1});
  const tensor empty = tensor::zeros(dtype::int32, {0, 3});
  auto out = decode_tensors(encode_tensors({&a, &b, &empty}), "peer");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape(), (shape_t{2, 1}));
  EXPECT_EQ(out[0].values<float>()[1], -2.f);
  EXPECT_EQ(out[1].values<std::int64_t>()[0], 1LL << 40);
  EXPECT_EQ(out[2].shape(), (shape_t{0, 3}));
}

TEST(TensorBytes, MalformedMessagesNameThePeer) {
  const tensor a = tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  const auto good = encode_tensors({&a});
  auto truncated = good;
  truncated.resize(good.size() - 1);
  expect_error([&] { decode_tensors(truncated, "process rank 2"); }, {"process rank 2 sent a malformed", "ends early"});
  auto bad_dtype = good;
  bad_dtype[4] = 99;
  expect_error([&] { decode_tensors(bad_dtype, "p"); }, {"unknown dtype 99"});
  auto huge = good;
  const std::int64_t dim = 1LL << 60;
  std::memcpy(huge.data() + 12, &dim, sizeof dim);
  expect_error([&] { decode_tensors(huge, "p"); }, {"a shape larger than the message"});
  auto trailing = good;
  trailing.push_back(0);
  expect_error([&] { decode_tensors(trailing, "p"); }, {"trailing bytes"});
}

} // namespace

// Data links: the TCP connection of their own that two processes' packets travel over beside
// CAF's (collectives/net/socket_link, link_door, packet_frame). The frame and hello formats,
// the door that admits each expected process once and turns strangers away, a link's packets
// both ways and how it breaks (a peer that exits, a malformed frame, a lie about the sender),
// and joined process groups that use links, or not with the option off.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collectives/net/link_door.hpp"
#include "collectives/net/packet_frame.hpp"
#include "collectives/net/process_group.hpp"
#include "collectives/net/socket_link.hpp"
#include "support/expect_error.hpp"
#include "support/free_port.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;
using pe::testing::contains;
using pe::testing::expect_error;

net_packet sample_packet(std::size_t bytes) {
  net_packet p;
  p.channel = 3;
  p.sequence = 41;
  p.from = 1;
  p.kind = 2;
  p.root = 1;
  p.label = "all_reduce(fc_0.w_0@GRAD)";
  p.offset = 256;
  p.total = 256 + bytes;
  for (std::size_t i = 0; i < bytes; ++i) p.bytes.push_back(static_cast<char>(i * 7 + 1));
  return p;
}

void expect_same(const net_packet& a, const net_packet& b) {
  EXPECT_EQ(a.channel, b.channel);
  EXPECT_EQ(a.sequence, b.sequence);
  EXPECT_EQ(a.from, b.from);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.total, b.total);
  EXPECT_EQ(a.failure, b.failure);
  EXPECT_TRUE(a.bytes == b.bytes);
}

std::string parse_error(const std::string& header) {
  auto parsed = parse_frame_header(reinterpret_cast<const unsigned char*>(header.data()));
  auto* why = std::get_if<std::string>(&parsed);
  return why ? *why : "";
}

TEST(PacketFrame, HeaderRoundTripsEveryField) {
  net_packet p = sample_packet(1000);
  p.failure = "rank 1 failed";
  const std::string frame = frame_bytes(p);
  ASSERT_EQ(frame.size(), frame_header_bytes + p.label.size() + p.failure.size() + p.bytes.size());
  auto parsed = parse_frame_header(reinterpret_cast<const unsigned char*>(frame.data()));
  ASSERT_TRUE(std::holds_alternative<frame_header>(parsed)) << std::get<std::string>(parsed);
  const auto& h = std::get<frame_header>(parsed);
  EXPECT_EQ(h.label_size, p.label.size());
  EXPECT_EQ(h.failure_size, p.failure.size());
  EXPECT_EQ(h.bytes_size, p.bytes.size());
  net_packet back = h.packet;
  back.label = p.label;
  back.failure = p.failure;
  back.bytes = p.bytes;
  expect_same(back, p);
}

TEST(PacketFrame, RefusesAWrongMagicNumberAndPartsAboveTheirLimits) {
  std::string frame = frame_bytes(sample_packet(8)).substr(0, frame_header_bytes);
  std::string wrong = frame;
  wrong[0] ^= 1;
  EXPECT_TRUE(contains(parse_error(wrong), "magic number"));
  // The sizes sit at the end of the header: label at byte 28, failure at 48, bytes at 52.
  auto with = [&](std::size_t at, std::uint32_t value) {
    std::string h = frame;
    for (int i = 0; i < 4; ++i) h[at + static_cast<std::size_t>(i)] = static_cast<char>(value >> (8 * i));
    return h;
  };
  EXPECT_TRUE(contains(parse_error(with(52, 0xFFFFFFFFu)), "payload piece is 4294967295 bytes"));
  EXPECT_TRUE(contains(parse_error(with(52, net_packet_bytes + 1)), "at most " + std::to_string(net_packet_bytes)));
  EXPECT_EQ(parse_error(with(52, net_packet_bytes)), "");
  EXPECT_TRUE(contains(parse_error(with(28, net_label_bytes + 1)), "label"));
  EXPECT_TRUE(contains(parse_error(with(48, net_failure_bytes + 1)), "failure"));
}

TEST(PacketFrame, HelloRoundTripsAndRefusesOtherVersions) {
  const std::string proof(link_secret_bytes, 'k');
  auto hello = encode_link_hello(5, proof);
  auto parsed = parse_link_hello(hello.data());
  ASSERT_TRUE(std::holds_alternative<link_hello>(parsed));
  EXPECT_EQ(std::get<link_hello>(parsed).rank, 5);
  EXPECT_EQ(std::get<link_hello>(parsed).proof, proof);
  hello[4] = 2; // version 2
  EXPECT_TRUE(contains(std::get<std::string>(parse_link_hello(hello.data())), "version 2"));
  hello[0] = 'X';
  EXPECT_TRUE(contains(std::get<std::string>(parse_link_hello(hello.data())), "magic number"));
}

TEST(LinkProof, NeedsTheTokenWhenTheJobHasOne) {
  const std::string secret(link_secret_bytes, 's');
  EXPECT_EQ(link_proof("", 2, secret), secret); // an open job: the secret itself
  const std::string proof = link_proof("token", 2, secret);
  EXPECT_EQ(proof.size(), link_secret_bytes);
  EXPECT_NE(proof, secret);
  EXPECT_NE(proof, link_proof("other token", 2, secret));
  EXPECT_NE(proof, link_proof("token", 3, secret)); // bound to the rank
}

/// A connection to 127.0.0.1:`port` that sends `bytes` (then waits for the door to close it).
int knock(std::uint16_t port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  if (!bytes.empty()) {
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  return fd;
}

/// Whether the door closed `fd` without welcoming it.
bool closed_unwelcomed(int fd) {
  char c = 0;
  const ssize_t got = ::recv(fd, &c, 1, 0);
  ::close(fd);
  return got == 0;
}

TEST(LinkDoor, AdmitsTheExpectedProcessesAndTurnsStrangersAway) {
  link_door door("127.0.0.1", "token");
  const std::string secret1 = door.expect(1), secret2 = door.expect(2);
  EXPECT_NE(secret1, secret2);
  std::vector<std::string> warnings;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  auto admitted = std::async(std::launch::async, [&] {
    return door.admit(deadline, [&](const std::string& w) { warnings.push_back(w); }, [] { return std::nullopt; });
  });
  // Strangers first: garbage, a wrong proof, a rank not expected, the secret without the
  // token, silence. Each is closed and the door goes on.
  std::vector<int> strangers = {knock(door.port(), std::string(link_hello_bytes, 'x')),
                                knock(door.port(), std::string(reinterpret_cast<const char*>(encode_link_hello(1, std::string(32, 'w')).data()), link_hello_bytes)),
                                knock(door.port(), std::string(reinterpret_cast<const char*>(encode_link_hello(7, link_proof("token", 7, secret1)).data()), link_hello_bytes)),
                                knock(door.port(), std::string(reinterpret_cast<const char*>(encode_link_hello(1, secret1).data()), link_hello_bytes)),
                                knock(door.port(), "")};
  for (int fd : strangers) EXPECT_TRUE(closed_unwelcomed(fd));
  const int one = dial_link("127.0.0.1", door.port(), 1, 0, link_proof("token", 1, secret1), deadline);
  // Rank 1 again, with its right proof: it is in already.
  EXPECT_TRUE(closed_unwelcomed(knock(door.port(), std::string(reinterpret_cast<const char*>(encode_link_hello(1, link_proof("token", 1, secret1)).data()), link_hello_bytes))));
  const int two = dial_link("127.0.0.1", door.port(), 2, 0, link_proof("token", 2, secret2), deadline);
  const auto in = admitted.get();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_TRUE(in.count(1) && in.count(2));
  // Five warnings at most: the duplicate rank 1 is closed silently.
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_TRUE(contains(warnings[0], "magic number"));
  EXPECT_TRUE(contains(warnings[1], "without that process's proof"));
  EXPECT_TRUE(contains(warnings[2], "rank 7, which this door does not expect"));
  EXPECT_TRUE(contains(warnings[3], "without that process's proof"));
  EXPECT_TRUE(contains(warnings[4], "no hello within"));
  EXPECT_TRUE(contains(warnings[4], "further ones are closed silently"));
  for (const auto& [rank, fd] : in) ::close(fd);
  ::close(one);
  ::close(two);
  // Shut once all are in: nobody else gets a connection.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(door.port());
  EXPECT_NE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(fd);
}

TEST(LinkDoor, SaysWhoIsMissingAtTheDeadlineAndStopsWhenTheJobBreaks) {
  link_door door("127.0.0.1", "");
  door.expect(1);
  door.expect(3);
  expect_error([&] { door.admit(std::chrono::steady_clock::now() + 200ms, [](const std::string&) {}, [] { return std::nullopt; }); },
               {"process rank 1, 3 did not open its data link"});
  link_door broken_job("127.0.0.1", "");
  broken_job.expect(1);
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] {
    broken_job.admit(start + 20s, [](const std::string&) {},
                     [] { return std::optional<std::string>("lost process rank 1: it exited"); });
  }, {"lost process rank 1"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(LinkDoor, DialingANonListeningPortFailsNamingThePeer) {
  const auto port = static_cast<std::uint16_t>(pe::testing::free_port());
  expect_error([&] { dial_link("127.0.0.1", port, 2, 1, std::string(32, 'p'), std::chrono::steady_clock::now() + 2s); },
               {"cannot connect to process rank 1's data link at 127.0.0.1:" + std::to_string(port)});
}

/// What a link's reader handed on: the packets and the one report of its end.
struct received {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<net_packet> packets;
  std::vector<std::string> reports;

  std::function<void(net_packet)> deliver() {
    return [this](net_packet p) {
      {
        std::lock_guard<std::mutex> guard(mutex);
        packets.push_back(std::move(p));
      }
      changed.notify_all();
    };
  }
  std::function<void(const std::string&)> broken() {
    return [this](const std::string& why) {
      {
        std::lock_guard<std::mutex> guard(mutex);
        reports.push_back(why);
      }
      changed.notify_all();
    };
  }
  bool wait(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, 20s, done);
  }
};

/// Processes 0 and 1 linked by a socket pair: at0 is what 0 receives on its link to 1.
struct link_pair {
  received at0, at1;
  std::unique_ptr<socket_link> to1_link, to0_link;
  link_pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    to1_link = std::make_unique<socket_link>(fds[0], 1, at0.deliver(), at0.broken());
    to0_link = std::make_unique<socket_link>(fds[1], 0, at1.deliver(), at1.broken());
  }
};

TEST(SocketLink, CarriesPacketsBothWaysInOrder) {
  link_pair pair;
  auto &at0 = pair.at0, &at1 = pair.at1;
  socket_link &to1 = *pair.to1_link, &to0 = *pair.to0_link;
  std::vector<net_packet> sent;
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4096}, net_packet_bytes, std::size_t{333}}) {
    net_packet p = sample_packet(bytes);
    p.from = 0;
    p.sequence = sent.size();
    sent.push_back(p);
    to1.send(std::move(p));
  }
  net_packet back = sample_packet(100);
  back.failure = "rank 1 failed: out of memory";
  to0.send(back);
  ASSERT_TRUE(at1.wait([&] { return at1.packets.size() == sent.size(); }));
  for (std::size_t i = 0; i < sent.size(); ++i) expect_same(at1.packets[i], sent[i]);
  ASSERT_TRUE(at0.wait([&] { return at0.packets.size() == 1; }));
  expect_same(at0.packets[0], back);
  to1.stop();
  // The peer's end closed: its reader reports the loss; the stopped side says nothing.
  ASSERT_TRUE(at1.wait([&] { return !at1.reports.empty(); }));
  EXPECT_TRUE(contains(at1.reports[0], "lost process rank 0: it exited, was killed or its data connection ended"));
  to0.stop();
  EXPECT_TRUE(at0.reports.empty());
  EXPECT_EQ(at1.reports.size(), 1u);
}

TEST(SocketLink, StopSendsWhatWasQueuedBeforeTheEnd) {
  // A process that passed its job's closing barrier sends its last packets and exits at
  // once: they must arrive before the end of the stream, not be dropped with the queue.
  link_pair pair;
  auto& at1 = pair.at1;
  std::vector<net_packet> sent;
  for (int i = 0; i < 40; ++i) {
    net_packet p = sample_packet(i % 2 ? net_packet_bytes : std::size_t{100});
    p.from = 0;
    p.sequence = sent.size();
    sent.push_back(p);
    pair.to1_link->send(std::move(p));
  }
  pair.to1_link->stop();
  ASSERT_TRUE(at1.wait([&] { return !at1.reports.empty(); }));
  ASSERT_EQ(at1.packets.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) expect_same(at1.packets[i], sent[i]);
  EXPECT_TRUE(contains(at1.reports[0], "lost process rank 0: it exited, was killed or its data connection ended"));
  EXPECT_TRUE(pair.at0.reports.empty());
}

TEST(SocketLink, StopDoesNotWaitLongerThanItsLimitForAPeerThatStoppedReading) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  received got;
  auto link = std::make_unique<socket_link>(fds[1], 1, got.deliver(), got.broken());
  for (int i = 0; i < 64; ++i) link->send(sample_packet(net_packet_bytes)); // more than the socket holds
  const auto start = std::chrono::steady_clock::now();
  link->stop(); // fds[0] is never read
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, socket_link::drain_limit - 50ms);
  EXPECT_LT(took, socket_link::drain_limit + 2s);
  EXPECT_TRUE(got.reports.empty());
  ::close(fds[0]);
}

/// A link to process 1 reading what a raw socket sends it.
struct raw_peer {
  int raw = -1;
  received got;
  std::unique_ptr<socket_link> link;
  raw_peer() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    raw = fds[0];
    link = std::make_unique<socket_link>(fds[1], 1, got.deliver(), got.broken());
  }
  ~raw_peer() {
    link.reset();
    ::close(raw);
  }
  std::string report_after(const std::string& bytes) {
    EXPECT_EQ(::send(raw, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
    EXPECT_TRUE(got.wait([&] { return !got.reports.empty(); }));
    return got.reports.empty() ? "" : got.reports[0];
  }
};

TEST(SocketLink, BreaksOnAMalformedFrameOrALieAboutTheSender) {
  {
    raw_peer p;
    EXPECT_TRUE(contains(p.report_after(std::string(frame_header_bytes, 'z')),
                         "process rank 1 sent a frame that does not start with PE-Actor's magic number on its data link"));
  }
  {
    raw_peer p;
    net_packet lie = sample_packet(4);
    lie.from = 2;
    EXPECT_TRUE(contains(p.report_after(frame_bytes(lie)),
                         "a packet claiming to come from process rank 2 came on process rank 1's data link"));
    EXPECT_TRUE(p.got.packets.empty());
  }
  {
    raw_peer p;
    std::string big = frame_bytes(sample_packet(4));
    big[52] = '\xff';
    big[53] = '\xff';
    big[54] = '\xff';
    big[55] = '\x7f';
    EXPECT_TRUE(contains(p.report_after(big), "payload piece is"));
  }
  {
    // A frame cut short, then the end: the loss is reported, the half packet never delivered.
    raw_peer p;
    const std::string frame = frame_bytes(sample_packet(100));
    ASSERT_EQ(::send(p.raw, frame.data(), frame.size() - 10, MSG_NOSIGNAL), static_cast<ssize_t>(frame.size() - 10));
    ::shutdown(p.raw, SHUT_WR);
    EXPECT_TRUE(p.got.wait([&] { return !p.got.reports.empty(); }));
    EXPECT_TRUE(contains(p.got.reports[0], "lost process rank 1"));
    EXPECT_TRUE(p.got.packets.empty());
  }
}

TEST(SocketLink, CutReportsTheLossAndDropsLaterSends) {
  link_pair pair;
  auto &at0 = pair.at0, &at1 = pair.at1;
  socket_link& to1 = *pair.to1_link;
  to1.cut();
  ASSERT_TRUE(at0.wait([&] { return !at0.reports.empty(); }));
  EXPECT_TRUE(contains(at0.reports[0], "lost process rank 1"));
  to1.send(sample_packet(10)); // dropped: no crash, nothing arrives
  ASSERT_TRUE(at1.wait([&] { return !at1.reports.empty(); }));
  EXPECT_TRUE(at1.packets.empty());
}

process_group_options options(int rank, int size, int port, bool links, std::string token) {
  process_group_options o;
  o.rank = rank;
  o.size = size;
  o.master_port = port;
  o.peer_timeout = 5s;
  o.join_timeout = 30s;
  o.fingerprint = {{"program", "a"}};
  o.data_links = links;
  o.job_token = std::move(token);
  return o;
}

std::vector<std::unique_ptr<process_group>> join_all(int size, bool links, const std::string& token = "") {
  const int port = pe::testing::free_port();
  std::vector<std::future<std::unique_ptr<process_group>>> joining;
  for (int r = 0; r < size; ++r)
    joining.push_back(std::async(std::launch::async, [=] { return join_processes(options(r, size, port, links, token)); }));
  std::vector<std::unique_ptr<process_group>> groups;
  for (auto& j : joining) groups.push_back(j.get());
  return groups;
}

/// Every process gathers a part of `bytes` bytes from every other; checks what each got.
void gather_and_check(std::vector<std::unique_ptr<process_group>>& groups, std::size_t bytes) {
  auto part = [&](int rank) {
    byte_buffer b;
    for (std::size_t i = 0; i < bytes; ++i) b.push_back(static_cast<char>(rank * 31 + static_cast<int>(i % 251)));
    return b;
  };
  std::vector<std::future<std::vector<byte_buffer>>> gathered;
  for (auto& g : groups)
    gathered.push_back(std::async(std::launch::async, [&g, &part] { return g->all_gather(part(g->rank())); }));
  for (auto& f : gathered) {
    const auto all = f.get();
    ASSERT_EQ(all.size(), groups.size());
    for (std::size_t r = 0; r < all.size(); ++r) EXPECT_TRUE(all[r] == part(static_cast<int>(r))) << "rank " << r;
  }
}

TEST(DataLinks, JoinedProcessesTalkOverThemAndWithoutThem) {
  for (bool links : {true, false}) {
    auto groups = join_all(3, links, links ? "a token" : "");
    for (auto& g : groups) EXPECT_EQ(g->data_links(), links ? 2 : 0) << "rank " << g->rank();
    // Several packets per payload (net_packet_bytes each), and an empty one.
    gather_and_check(groups, 3 * net_packet_bytes + 17);
    gather_and_check(groups, 0);
  }
}

TEST(DataLinks, APeerThatLeavesBreaksTheOthersNamingIt) {
  auto groups = join_all(3, true);
  groups[1].reset(); // process 1 exits
  std::vector<std::future<std::string>> failed;
  for (int r : {0, 2})
    failed.push_back(std::async(std::launch::async, [&, r] {
      return pe::testing::error_of([&] { groups[static_cast<std::size_t>(r)]->all_gather(byte_buffer(10, 'x')); });
    }));
  for (auto& f : failed) EXPECT_TRUE(contains(f.get(), "lost process rank 1")) ;
}

} // namespace

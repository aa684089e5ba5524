// Fuzz target: what a peer sends on a data link (collectives/net/socket_link, packet_frame)
// and what a stranger says to a data-link door (parse_link_hello). The first input byte
// chooses: 0, a door's hello (the next link_hello_bytes bytes); otherwise the rest of the
// input is the byte stream of process rank 1's link to rank 0 of 3, read by a real
// socket_link from a socket pair, every packet it hands on filed into a net_inbox. A frame
// stream ends in exactly one report (the end of the stream or why the bytes are no frames),
// never a crash, a hang or a packet beyond its limits.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <variant>

#include <sys/socket.h>
#include <unistd.h>

#include "collectives/net/net_inbox.hpp"
#include "collectives/net/packet_frame.hpp"
#include "collectives/net/socket_link.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using pe::fuzz::require;

void fuzz_hello(const std::uint8_t* data, std::size_t size) {
  unsigned char hello[pe::link_hello_bytes] = {};
  std::memcpy(hello, data, std::min(size, sizeof hello));
  auto parsed = pe::parse_link_hello(hello);
  if (auto* h = std::get_if<pe::link_hello>(&parsed)) {
    require(h->proof.size() == pe::link_secret_bytes, "a hello's proof of the wrong size");
    const auto again = pe::encode_link_hello(h->rank, h->proof);
    require(std::memcmp(again.data(), hello, sizeof hello) == 0, "a parsed hello encodes to other bytes");
  } else {
    require(!std::get<std::string>(parsed).empty(), "a refused hello without a reason");
  }
}

void fuzz_stream(const std::uint8_t* data, std::size_t size) {
  int fds[2];
  require(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "no socket pair");
  pe::net_inbox inbox(0, 3);
  std::mutex mutex;
  std::condition_variable changed;
  int reports = 0;
  {
    pe::socket_link link(
        fds[1], 1,
        [&](pe::net_packet p) {
          require(p.from == 1, "a link handed on a packet from another rank");
          require(p.bytes.size() <= pe::net_packet_bytes && p.label.size() <= pe::net_label_bytes &&
                      p.failure.size() <= pe::net_failure_bytes,
                  "a link handed on a packet beyond its limits");
          inbox.deliver(std::move(p));
        },
        [&](const std::string& why) {
          require(!why.empty(), "a link broke without a reason");
          std::lock_guard<std::mutex> guard(mutex);
          ++reports;
          changed.notify_all();
        });
    // Written from another thread: a stream longer than the socket's buffer needs the reader.
    std::thread writer([&] {
      for (std::size_t at = 0; at < size;) {
        const ssize_t sent = ::send(fds[0], data + at, size - at, MSG_NOSIGNAL);
        if (sent <= 0) break; // the reader stopped at a malformed frame
        at += static_cast<std::size_t>(sent);
      }
      ::shutdown(fds[0], SHUT_WR);
    });
    std::unique_lock<std::mutex> lock(mutex);
    require(changed.wait_for(lock, std::chrono::seconds(20), [&] { return reports > 0; }),
            "a link read a finite stream without reporting its end");
    lock.unlock();
    writer.join();
  } // stop(): both threads end
  require(reports == 1, "a link reported its end more than once");
  ::close(fds[0]);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] == 0) fuzz_hello(data + 1, size - 1);
  else fuzz_stream(data + 1, size - 1);
  return 0;
}

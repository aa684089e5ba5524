#include "collectives/net/socket_link.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <thread>
#include <variant>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collectives/net/packet_frame.hpp"
#include "collectives/net/socket_io.hpp"

namespace pe {

namespace {

/// Bytes written to `fd` that the peer's kernel has not yet acknowledged (TCP) or read
/// (a Unix socket); 0 when the socket cannot say.
int unsent_bytes(int fd) {
  int queued = 0;
  return ::ioctl(fd, SIOCOUTQ, &queued) == 0 ? queued : 0;
}

/// Reads exactly `n` bytes; false at the end of the stream or on an error (`why` says which).
bool read_exact(int fd, void* into, std::size_t n, std::string& why) {
  auto* at = static_cast<char*>(into);
  while (n > 0) {
    const ssize_t got = ::recv(fd, at, n, 0);
    if (got > 0) {
      at += got;
      n -= static_cast<std::size_t>(got);
    } else if (got == 0) {
      why = "its data connection ended";
      return false;
    } else if (errno != EINTR) {
      why = std::string("its data connection broke: ") + std::strerror(errno);
      return false;
    }
  }
  return true;
}

} // namespace

socket_link::socket_link(int fd, int peer, std::function<void(net_packet)> deliver,
                         std::function<void(const std::string&)> broken)
    : fd_(fd), peer_(peer), deliver_(std::move(deliver)), broken_(std::move(broken)) {
  const int on = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on); // a packet's last bytes go at once
  writer_ = std::thread([this] { write_loop(); });
  reader_ = std::thread([this] { read_loop(); });
}

socket_link::~socket_link() { stop(); }

void socket_link::send(net_packet p) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (dead_ || stopping_) return;
    queue_.push_back(std::move(p));
  }
  queued_.notify_one();
}

void socket_link::cut() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    dead_ = true;
    queue_.clear();
  }
  ::shutdown(fd_, SHUT_RDWR);
  queued_.notify_one();
}

void socket_link::stop() {
  const auto deadline = std::chrono::steady_clock::now() + drain_limit;
  bool drained = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true; // send() refuses from now on; the writer ends once the queue is empty
    queued_.notify_one();
    writer_ended_.wait_until(lock, deadline, [this] { return writer_done_; });
    drained = writer_done_ && !dead_ && queue_.empty();
  }
  if (drained) {
    // The end after the last byte; then wait until the peer's kernel has every byte: closing
    // with bytes of the peer's still unread here resets the connection, and a reset drops
    // what this side had not yet sent.
    ::shutdown(fd_, SHUT_WR);
    while (unsent_bytes(fd_) > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::shutdown(fd_, SHUT_RDWR); // wakes the reader (and a writer blocked on a full socket)
  {
    std::lock_guard<std::mutex> guard(mutex_);
    queue_.clear();
  }
  queued_.notify_one();
  if (writer_.joinable()) writer_.join();
  if (reader_.joinable()) reader_.join();
  ::close(fd_);
}

void socket_link::report(const std::string& why) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    dead_ = true;
    queue_.clear();
    if (stopping_ || reported_) return;
    reported_ = true;
  }
  broken_(why);
}

void socket_link::write_loop() {
  std::deque<net_packet> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queued_.wait(lock, [this] { return stopping_ || dead_ || !queue_.empty(); });
      if (dead_ || queue_.empty()) break; // stop() with everything sent, or a broken socket
      batch.swap(queue_);
    }
    bool sent = true;
    for (auto& p : batch) {
      const auto header = encode_frame_header(p);
      iovec parts[4] = {{const_cast<unsigned char*>(header.data()), header.size()},
                        {p.label.data(), p.label.size()},
                        {p.failure.data(), p.failure.size()},
                        {p.bytes.data(), p.bytes.size()}};
      std::string why;
      if (!send_all(fd_, parts, 4, why)) {
        report("lost process rank " + std::to_string(peer_) + ": " + why);
        sent = false;
        break;
      }
    }
    batch.clear();
    if (!sent) break;
  }
  {
    std::lock_guard<std::mutex> guard(mutex_);
    writer_done_ = true;
  }
  writer_ended_.notify_all();
}

void socket_link::read_loop() {
  const std::string peer = "process rank " + std::to_string(peer_);
  std::array<unsigned char, frame_header_bytes> header{};
  std::string why;
  for (;;) {
    if (!read_exact(fd_, header.data(), header.size(), why)) break;
    auto parsed = parse_frame_header(header.data());
    if (auto* lie = std::get_if<std::string>(&parsed)) {
      report(peer + " sent " + *lie + " on its data link");
      return;
    }
    auto& h = std::get<frame_header>(parsed);
    if (h.packet.from != peer_) {
      report("a packet claiming to come from process rank " + std::to_string(h.packet.from) +
             " came on " + peer + "'s data link");
      return;
    }
    net_packet p = std::move(h.packet);
    p.label.resize(h.label_size);
    p.failure.resize(h.failure_size);
    p.bytes.resize(h.bytes_size); // not zeroed (byte_buffer's allocator): the socket fills it
    if (!read_exact(fd_, p.label.data(), p.label.size(), why) ||
        !read_exact(fd_, p.failure.data(), p.failure.size(), why) ||
        !read_exact(fd_, p.bytes.data(), p.bytes.size(), why))
      break;
    deliver_(std::move(p));
  }
  report("lost process rank " + std::to_string(peer_) + ": it exited, was killed or " + why);
}

} // namespace pe

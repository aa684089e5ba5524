#include "collectives/net/socket_link.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <variant>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collectives/net/packet_frame.hpp"
#include "collectives/net/socket_io.hpp"

namespace pe {

namespace {

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
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopping_) return;
    stopping_ = true;
    queue_.clear();
  }
  ::shutdown(fd_, SHUT_RDWR); // wakes the reader (and a writer blocked on a full socket)
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
      if (stopping_ || dead_) return;
      batch.swap(queue_);
    }
    for (auto& p : batch) {
      const auto header = encode_frame_header(p);
      iovec parts[4] = {{const_cast<unsigned char*>(header.data()), header.size()},
                        {p.label.data(), p.label.size()},
                        {p.failure.data(), p.failure.size()},
                        {p.bytes.data(), p.bytes.size()}};
      std::string why;
      if (!send_all(fd_, parts, 4, why)) {
        report("lost process rank " + std::to_string(peer_) + ": " + why);
        return;
      }
    }
    batch.clear();
  }
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

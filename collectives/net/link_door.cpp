#include "collectives/net/link_door.hpp"

#include <cerrno>
#include <cstring>
#include <variant>

#include <sys/time.h>

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collectives/net/packet_frame.hpp"
#include "collectives/net/socket_io.hpp"
#include "core/error.hpp"
#include "crypto/digest.hpp"
#include "crypto/random_bytes.hpp"

namespace pe {

namespace {

/// How long a dialer has to say its hello before the door closes on it.
constexpr std::chrono::milliseconds hello_time{1000};

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

/// Reads exactly `n` bytes by `deadline`; false otherwise.
bool read_by(int fd, unsigned char* into, std::size_t n, std::chrono::steady_clock::time_point deadline) {
  while (n > 0) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t got = ::recv(fd, into, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    into += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

/// Writes all `n` bytes (send_all with one part); false on an error.
bool write_all(int fd, const unsigned char* from, std::size_t n) {
  iovec part{const_cast<unsigned char*>(from), n};
  std::string why;
  return send_all(fd, &part, 1, why);
}

std::string error_text() { return std::strerror(errno); }

} // namespace

std::string link_proof(const std::string& job_token, int rank, const std::string& secret) {
  if (job_token.empty()) return secret;
  return hmac_sha256(job_token, "pe-actor data link v1\n" + std::to_string(rank) + "\n" + secret);
}

link_door::link_door(const char* bind_to, std::string job_token) : token_(std::move(job_token)) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  auto listen_on = [&](const addrinfo* a) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) return -1;
    if (a->ai_family == AF_INET6 && !bind_to) {
      const int off = 0;
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    }
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  };
  // Every interface: IPv6 and IPv4 at once on one socket, else IPv4 alone (a host without IPv6).
  for (const int family : {bind_to ? AF_UNSPEC : AF_INET6, AF_INET}) {
    hints.ai_family = family;
    if (::getaddrinfo(bind_to, "0", &hints, &found) != 0) continue;
    for (const addrinfo* a = found; a && fd_ < 0; a = a->ai_next) fd_ = listen_on(a);
    ::freeaddrinfo(found);
    if (fd_ >= 0) break;
  }
  if (fd_ < 0)
    throw error(std::string("cannot listen for data links on ") + (bind_to ? bind_to : "every interface") +
                ": " + error_text());
  sockaddr_storage at{};
  socklen_t size = sizeof at;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &size);
  port_ = ntohs(at.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&at)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&at)->sin_port);
}

link_door::~link_door() {
  if (fd_ >= 0) ::close(fd_);
}

std::string link_door::expect(int rank) {
  std::string secret = random_bytes(link_secret_bytes);
  proofs_[rank] = link_proof(token_, rank, secret);
  return secret;
}

std::map<int, int> link_door::admit(std::chrono::steady_clock::time_point deadline,
                                    const std::function<void(const std::string&)>& warn,
                                    const std::function<std::optional<std::string>()>& broken) {
  std::map<int, int> in;
  int strangers = 0;
  auto close_all = [&] {
    for (auto& [rank, fd] : in) ::close(fd);
  };
  while (!proofs_.empty()) {
    if (auto why = broken()) {
      close_all();
      throw error(*why);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      close_all();
      std::string missing;
      for (const auto& [rank, secret] : proofs_) missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
      throw error("process rank " + missing + " did not open its data link to this process in time");
    }
    pollfd p{fd_, POLLIN, 0};
    // Wakes now and then to look at `broken` and the deadline.
    if (::poll(&p, 1, std::min(remaining_ms(deadline), 100)) <= 0) continue;
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::array<unsigned char, link_hello_bytes> hello{};
    std::string refusal;
    int rank = -1;
    if (!read_by(fd, hello.data(), hello.size(), std::min(deadline, std::chrono::steady_clock::now() + hello_time))) {
      refusal = "it sent no hello within " + std::to_string(hello_time.count()) + " ms";
    } else {
      auto parsed = parse_link_hello(hello.data());
      if (auto* why = std::get_if<std::string>(&parsed)) {
        refusal = "it sent " + *why;
      } else {
        const auto& h = std::get<link_hello>(parsed);
        auto expected = proofs_.find(h.rank);
        if (expected == proofs_.end())
          refusal = "it claims to be process rank " + std::to_string(h.rank) + ", which this door does not expect (now)";
        else if (!constant_time_equal(h.proof, expected->second))
          refusal = "it claims to be process rank " + std::to_string(h.rank) + " without that process's proof";
        else
          rank = h.rank;
      }
    }
    if (rank < 0 || !write_all(fd, link_welcome.data(), link_welcome.size())) {
      ::close(fd);
      if (++strangers <= 5)
        warn("closed a connection to this process's data-link port: " +
             (refusal.empty() ? std::string("it left before its welcome") : refusal) +
             " (a stranger; the job goes on" + (strangers == 5 ? "; further ones are closed silently)" : ")"));
      continue;
    }
    proofs_.erase(rank);
    in.emplace(rank, fd);
  }
  ::close(fd_); // the door is shut: nobody else comes in
  fd_ = -1;
  return in;
}

int dial_link(const std::string& host, std::uint16_t port, int me, int peer, const std::string& proof,
              std::chrono::steady_clock::time_point deadline) {
  const std::string who = "process rank " + std::to_string(peer) + "'s data link at " + host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int e = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); e != 0)
    throw error("cannot find " + who + ": " + ::gai_strerror(e));
  int fd = -1;
  std::string why = "no address";
  for (const addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // connect() waits at most until the deadline (Linux honours the send timeout there).
    timeval limit{};
    const int ms = std::max(1, remaining_ms(deadline));
    limit.tv_sec = ms / 1000;
    limit.tv_usec = (ms % 1000) * 1000;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = error_text();
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) throw error("cannot connect to " + who + ": " + why);
  const auto hello = encode_link_hello(me, proof);
  std::array<unsigned char, link_welcome.size()> welcome{};
  if (!write_all(fd, hello.data(), hello.size()) || !read_by(fd, welcome.data(), welcome.size(), deadline) ||
      welcome != link_welcome) {
    ::close(fd);
    throw error(who + " did not welcome this process in time");
  }
  const timeval none{};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none); // a link's writes wait as long as they must
  return fd;
}

} // namespace pe

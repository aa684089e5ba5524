#include "collectives/gloo/gloo_mesh.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/context.h>
#include <gloo/transport/tcp/device.h>

#include "collectives/net/process_group.hpp"
#include "core/error.hpp"

namespace pe {

namespace {

/// The local address this machine sends from to reach `host` (a UDP "connect" only picks
/// the route; nothing is sent): what the other processes can reach this one at.
std::string address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port > 0 ? port : 9).c_str(), &hints, &found) != 0 ||
      found == nullptr)
    throw error("gloo: cannot resolve the master host '" + host + "'");
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in local{};
  socklen_t length = sizeof local;
  const bool ok = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  ::freeaddrinfo(found);
  if (fd >= 0) ::close(fd);
  char text[INET_ADDRSTRLEN] = {};
  if (!ok || ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) == nullptr)
    throw error("gloo: no route from this machine to the master host '" + host + "'");
  return text;
}

/// gloo::Context's connection is set by its subclasses (rendezvous::Context does it through
/// a key-value store); this one is given the peers' addresses directly.
class mesh_context final : public gloo::Context {
 public:
  using gloo::Context::Context;

  void connect(process_group& group, std::shared_ptr<gloo::transport::Device> device,
               std::chrono::milliseconds timeout) {
    auto pairs = device->createContext(rank, size);
    pairs->setTimeout(timeout);
    // Mine: for every peer in rank order, [u32 length][the address its pair listens on].
    byte_buffer mine;
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      const std::vector<char> address = pairs->createPair(peer)->address().bytes();
      const auto length = static_cast<std::uint32_t>(address.size());
      mine.insert(mine.end(), reinterpret_cast<const char*>(&length),
                  reinterpret_cast<const char*>(&length) + sizeof length);
      mine.insert(mine.end(), address.begin(), address.end());
    }
    const auto all = group.all_gather(mine);
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      const std::vector<char> address = entry_for_me(all[static_cast<std::size_t>(peer)], peer);
      try {
        pairs->getPair(peer)->connect(address);
      } catch (const std::exception& e) {
        throw error("gloo: cannot connect to process rank " + std::to_string(peer) + ": " + e.what());
      }
    }
    device_ = std::move(device);
    transportContext_ = std::move(pairs);
    setTimeout(timeout);
  }

 private:
  /// In `theirs` (what process `peer` sent), the address of its pair for this process.
  std::vector<char> entry_for_me(const byte_buffer& theirs, int peer) const {
    const int index = rank < peer ? rank : rank - 1;
    std::size_t at = 0;
    for (int i = 0;; ++i) {
      std::uint32_t length = 0;
      if (theirs.size() - at < sizeof length) break;
      std::memcpy(&length, theirs.data() + at, sizeof length);
      at += sizeof length;
      if (theirs.size() - at < length) break;
      if (i == index) return {theirs.begin() + static_cast<std::ptrdiff_t>(at),
                              theirs.begin() + static_cast<std::ptrdiff_t>(at + length)};
      at += length;
    }
    throw error("gloo: process rank " + std::to_string(peer) + " sent malformed addresses (" +
                std::to_string(theirs.size()) + " bytes)");
  }
};

} // namespace

std::shared_ptr<gloo::Context> connect_gloo_mesh(process_group& group, std::chrono::milliseconds timeout) {
  gloo::transport::tcp::attr attr;
  attr.hostname = address_towards(group.options().master_host, group.options().master_port);
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw error("gloo: cannot listen on " + attr.hostname + ": " + e.what());
  }
  auto context = std::make_shared<mesh_context>(group.rank(), group.size());
  context->connect(group, std::move(device), timeout);
  return context;
}

} // namespace pe

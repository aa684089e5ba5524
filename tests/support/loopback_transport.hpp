#pragma once

#include <memory>
#include <vector>

#include "collectives/net/net_transport.hpp"
#include "devices/progress.hpp"

namespace pe::testing {

/// N processes' transports inside one test process: a send delivers straight into the
/// receiver's inbox, on the sender's thread. What the cross-process collectives need,
/// without sockets.
class loopback_network {
 public:
  explicit loopback_network(int processes) {
    for (int r = 0; r < processes; ++r)
      inboxes_.push_back(std::make_unique<net_inbox>(r, processes, [] { notify_progress(); }));
  }

  /// Process `rank`'s transport; it keeps a reference to this network.
  std::unique_ptr<net_transport> transport(int rank) { return std::make_unique<endpoint>(*this, rank); }

  net_inbox& inbox(int rank) { return *inboxes_[static_cast<std::size_t>(rank)]; }

 private:
  struct endpoint final : net_transport {
    endpoint(loopback_network& n, int r) : network(n), rank(r) {}
    net_inbox& inbox() override { return network.inbox(rank); }
    void send(int to, net_packet packet) override { network.inbox(to).deliver(std::move(packet)); }
    loopback_network& network;
    int rank;
  };

  std::vector<std::unique_ptr<net_inbox>> inboxes_;
};

} // namespace pe::testing

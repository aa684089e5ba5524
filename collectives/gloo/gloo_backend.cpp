#include "collectives/gloo/gloo_backend.hpp"

#include "collectives/gloo/gloo_communicator.hpp"
#include "collectives/gloo/gloo_mesh.hpp"
#include "collectives/net/net_communicator.hpp"
#include "collectives/net/process_group.hpp"

namespace pe {

process_backend gloo_backend() {
  return {"gloo", "Gloo's ring collectives over its own TCP connections (rendezvous over CAF)",
          [](const process_backend_context& c) -> std::unique_ptr<communicator> {
            // Every process passed the handshake before a transfer starts, so a transfer
            // that takes longer than a peer may stay silent means a peer froze or was cut
            // off mid-transfer (Gloo cannot be woken by the heartbeats).
            const auto timeout = c.group.options().peer_timeout;
            auto control = std::make_unique<net_communicator>(c.transport, c.channel, 1);
            auto context = connect_gloo_mesh(c.group, timeout);
            return std::make_unique<gloo_communicator>(c.group, std::move(context), std::move(control),
                                                       c.local_ranks, timeout);
          }};
}

} // namespace pe

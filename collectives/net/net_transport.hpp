#pragma once

#include "collectives/net/net_inbox.hpp"
#include "collectives/net/net_packet.hpp"

namespace pe {

/// How this process reaches the others: what the cross-process collectives are written
/// against. The CAF implementation lives in process_group.cpp; tests connect inboxes in
/// memory (loopback_transport).
class net_transport {
 public:
  virtual ~net_transport() = default;

  /// Packets for this process, from every peer. Its rank() and size() are the process's.
  virtual net_inbox& inbox() = 0;

  /// Sends `packet` (from = this rank) to process `to`; returns at once. A send to a lost
  /// peer is dropped: the loss reaches the inbox as a failure.
  virtual void send(int to, net_packet packet) = 0;
};

/// Sends `payload` to process `to` as packets with `header`'s fields.
void send_payload(net_transport& t, int to, const net_packet& header,
                  const std::vector<char>& payload);

/// Sends `packets` (split_payload's) to process `to`.
void send_packets(net_transport& t, int to, std::vector<net_packet> packets);

} // namespace pe

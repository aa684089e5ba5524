#pragma once

#include <cstdint>
#include <vector>

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

  /// How many peers this process reaches over a data link of its own (socket_link) rather
  /// than CAF's messages: what a test checks and a log may say.
  virtual int data_links() const { return 0; }
};

/// Sends `payload` to process `to` as packets with `header`'s fields.
void send_payload(net_transport& t, int to, const net_packet& header,
                  const byte_buffer& payload);

/// Sends `packets` (split_payload's) to process `to`.
void send_packets(net_transport& t, int to, std::vector<net_packet> packets);

/// Sends one packet to process `to`, counted in payload_bytes_sent as every packet is.
void send_packet(net_transport& t, int to, net_packet packet);

/// The payload bytes this process has sent through send_payload so far, to every peer
/// together (collectives and host exchanges; packet headers and CAF's framing not counted):
/// send_packets counts them too: what bench/sparse_bench reports as the bytes a process exchanges per step.
std::uint64_t payload_bytes_sent();

} // namespace pe

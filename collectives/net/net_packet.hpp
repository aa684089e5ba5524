#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/byte_buffer.hpp"

namespace pe {

/// The one message that carries data between processes: a piece of one payload (a
/// collective's contribution, a host exchange) identified by (channel, sequence, from).
/// Payloads travel as bytes, never as floats: CAF 0.17 serialises floats with a loop that
/// hangs on +Inf (reference.md §9). Payloads above the packet limit are cut into packets
/// that the receiver reassembles by offset.
struct net_packet {
  std::uint32_t channel = 0;  ///< 0: host exchanges; 1, 2, ...: communicators, in creation order
  std::uint64_t sequence = 0; ///< position in the channel's order, the same on every process
  std::int32_t from = 0;      ///< the sender's process rank (checked against the connection)
  std::int32_t kind = 0;      ///< what the sender runs (collective_call::kind), checked
  std::int32_t root = 0;      ///< its root rank, checked
  /// What the sender calls the collective ("all_reduce(fc_0.w_0@GRAD)"), checked: two
  /// processes at one sequence number with different variables fail naming both.
  std::string label;
  std::uint64_t offset = 0;   ///< where `bytes` starts in the payload
  std::uint64_t total = 0;    ///< the payload's size in bytes
  std::string failure;        ///< non-empty: the sender failed this exchange, and why
  byte_buffer bytes;
};

/// What one payload from one process became once every packet arrived.
struct net_payload {
  std::int32_t kind = 0;
  std::int32_t root = 0;
  std::string failure;
  byte_buffer bytes;
  std::uint64_t total = 0; ///< the payload's size (bytes holds all of it once complete)
  std::string label;       ///< the sender's name for the collective (net_packet::label)
};

/// Packets are at most this many bytes: far below CAF's 32-bit message size, and small
/// enough that the receiver sums packet k while later ones still travel (and that each
/// packet's buffers stay cache- and allocator-friendly). Measured with
/// bench/process_allreduce_bench (2 processes, 1 to 16 MiB, 2-vCPU machine, builds paused):
/// 256 KiB ran at 0.91-1.27x Gloo's bandwidth, 4 MiB at 0.59-0.97x, 64 KiB at 0.73-0.87x.
inline constexpr std::size_t net_packet_bytes = 256u << 10;

/// A packet's failure message is at most this many bytes (longer ones are cut by the sender
/// and refused by the receiver).
inline constexpr std::size_t net_failure_bytes = std::size_t{64} << 10;

/// A packet's label is at most this many bytes (refused above it by the receiver).
inline constexpr std::size_t net_label_bytes = std::size_t{4} << 10;

/// Cuts `payload` into packets of at most net_packet_bytes (one packet when empty), each
/// carrying `header`'s fields and its offset.
std::vector<net_packet> split_payload(const net_packet& header, const byte_buffer& payload);

/// The same for a payload of `size` bytes that `fill(offset, n, out)` writes: it appends
/// the payload's bytes [offset, offset + n) to `out` (reserved, empty). Packets are then
/// cut straight from where the bytes live (tensors, a range of a buffer) without first
/// copying the whole payload into one vector.
std::vector<net_packet> split_payload(const net_packet& header, std::size_t size,
                                      const std::function<void(std::size_t, std::size_t, byte_buffer&)>& fill);

} // namespace pe

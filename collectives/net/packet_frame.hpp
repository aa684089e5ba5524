#pragma once
// How a net_packet crosses a data socket (socket_link): a fixed header, then the label, the
// failure and the payload bytes, each as long as the header says. No CAF: the data sockets
// carry the collectives' bytes beside CAF's connections, with no serializer between the
// socket and the packet's buffer.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "collectives/net/net_packet.hpp"

namespace pe {

/// The fixed part of a frame, in bytes.
inline constexpr std::size_t frame_header_bytes = 56;

/// A frame's fixed part once read: the packet without its three variable parts, and how
/// long each of those is (every one within its limit: net_label_bytes, net_failure_bytes,
/// net_packet_bytes).
struct frame_header {
  net_packet packet; ///< label, failure and bytes empty
  std::uint32_t label_size = 0;
  std::uint32_t failure_size = 0;
  std::uint32_t bytes_size = 0;
};

/// The fixed part of `p`'s frame (its sizes taken from p's fields, which must be within
/// their limits: the sender's own packets are).
std::array<unsigned char, frame_header_bytes> encode_frame_header(const net_packet& p);

/// The whole frame of `p` in one string (what socket_link writes in pieces): for tests and
/// fuzz seeds.
std::string frame_bytes(const net_packet& p);

/// Reads a frame's fixed part: the header, or why these bytes are no frame (a wrong magic
/// number: the stream lost its place or is no data link; a part longer than its limit).
std::variant<frame_header, std::string> parse_frame_header(const unsigned char* bytes);

/// What a process that dials a peer's data door sends first, in bytes.
inline constexpr std::size_t link_hello_bytes = 44;
/// The secret a door gives each process it expects (through CAF), and the proof a dialer
/// shows (link_door.hpp's link_proof), in bytes.
inline constexpr std::size_t link_secret_bytes = 32;

/// The hello of process `rank` showing `proof` (link_secret_bytes).
std::array<unsigned char, link_hello_bytes> encode_link_hello(int rank, const std::string& proof);

/// A hello read: who claims to dial and the proof it shows.
struct link_hello {
  int rank = 0;
  std::string proof;
};

/// Reads a hello, or why these bytes are none (a stranger's, another version's).
std::variant<link_hello, std::string> parse_link_hello(const unsigned char* bytes);

/// What a door answers a hello it accepts: the dialer then knows its link is up.
inline constexpr std::array<unsigned char, 4> link_welcome = {'P', 'E', 'O', 'K'};

} // namespace pe

#include "collectives/net/packet_frame.hpp"

#include <algorithm>
#include <cstring>

namespace pe {

namespace {

// Little-endian on the wire whatever the host, one byte at a time.
template <class T>
void put(unsigned char*& at, T value) {
  auto u = static_cast<std::make_unsigned_t<T>>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i) *at++ = static_cast<unsigned char>(u >> (8 * i));
}

template <class T>
T get(const unsigned char*& at) {
  std::make_unsigned_t<T> u = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) u |= static_cast<std::make_unsigned_t<T>>(*at++) << (8 * i);
  return static_cast<T>(u);
}

constexpr std::uint32_t frame_magic = 0x31504550;  // "PEP1"
constexpr std::uint32_t hello_magic = 0x31484550;  // "PEH1"

} // namespace

std::array<unsigned char, frame_header_bytes> encode_frame_header(const net_packet& p) {
  std::array<unsigned char, frame_header_bytes> out{};
  unsigned char* at = out.data();
  put<std::uint32_t>(at, frame_magic);
  put<std::uint32_t>(at, p.channel);
  put<std::uint64_t>(at, p.sequence);
  put<std::int32_t>(at, p.from);
  put<std::int32_t>(at, p.kind);
  put<std::int32_t>(at, p.root);
  put<std::uint32_t>(at, static_cast<std::uint32_t>(p.label.size()));
  put<std::uint64_t>(at, p.offset);
  put<std::uint64_t>(at, p.total);
  put<std::uint32_t>(at, static_cast<std::uint32_t>(p.failure.size()));
  put<std::uint32_t>(at, static_cast<std::uint32_t>(p.bytes.size()));
  return out;
}

std::string frame_bytes(const net_packet& p) {
  const auto header = encode_frame_header(p);
  std::string out(header.begin(), header.end());
  out += p.label;
  out += p.failure;
  out.append(p.bytes.data(), p.bytes.size());
  return out;
}

std::variant<frame_header, std::string> parse_frame_header(const unsigned char* bytes) {
  const unsigned char* at = bytes;
  if (get<std::uint32_t>(at) != frame_magic) return std::string("a frame that does not start with PE-Actor's magic number");
  frame_header h;
  h.packet.channel = get<std::uint32_t>(at);
  h.packet.sequence = get<std::uint64_t>(at);
  h.packet.from = get<std::int32_t>(at);
  h.packet.kind = get<std::int32_t>(at);
  h.packet.root = get<std::int32_t>(at);
  h.label_size = get<std::uint32_t>(at);
  h.packet.offset = get<std::uint64_t>(at);
  h.packet.total = get<std::uint64_t>(at);
  h.failure_size = get<std::uint32_t>(at);
  h.bytes_size = get<std::uint32_t>(at);
  auto too_long = [](const char* what, std::uint32_t size, std::size_t limit) {
    return std::string("a frame whose ") + what + " is " + std::to_string(size) + " bytes (at most " +
           std::to_string(limit) + ")";
  };
  if (h.label_size > net_label_bytes) return too_long("label", h.label_size, net_label_bytes);
  if (h.failure_size > net_failure_bytes) return too_long("failure", h.failure_size, net_failure_bytes);
  if (h.bytes_size > net_packet_bytes) return too_long("payload piece", h.bytes_size, net_packet_bytes);
  return h;
}

std::array<unsigned char, link_hello_bytes> encode_link_hello(int rank, const std::string& proof) {
  std::array<unsigned char, link_hello_bytes> out{};
  unsigned char* at = out.data();
  put<std::uint32_t>(at, hello_magic);
  put<std::uint32_t>(at, 1); // version
  put<std::int32_t>(at, rank);
  std::memcpy(at, proof.data(), std::min(proof.size(), link_secret_bytes));
  return out;
}

std::variant<link_hello, std::string> parse_link_hello(const unsigned char* bytes) {
  const unsigned char* at = bytes;
  if (get<std::uint32_t>(at) != hello_magic) return std::string("a hello without PE-Actor's magic number");
  if (const auto version = get<std::uint32_t>(at); version != 1)
    return "a hello of data link version " + std::to_string(version) + " (this build speaks 1)";
  link_hello h;
  h.rank = get<std::int32_t>(at);
  h.proof.assign(reinterpret_cast<const char*>(at), link_secret_bytes);
  return h;
}

} // namespace pe

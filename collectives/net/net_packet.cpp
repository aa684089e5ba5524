#include "collectives/net/net_packet.hpp"

#include <algorithm>

namespace pe {

std::vector<net_packet> split_payload(const net_packet& header, std::size_t size,
                                      const std::function<void(std::size_t, std::size_t, byte_buffer&)>& fill) {
  std::vector<net_packet> packets;
  std::size_t offset = 0;
  do {
    const std::size_t n = std::min(net_packet_bytes, size - offset);
    net_packet p = header;
    p.offset = offset;
    p.total = size;
    p.bytes.reserve(n); // filled by appending: no zeroing of bytes about to be overwritten
    if (n > 0) fill(offset, n, p.bytes);
    packets.push_back(std::move(p));
    offset += n;
  } while (offset < size);
  return packets;
}

std::vector<net_packet> split_payload(const net_packet& header, const byte_buffer& payload) {
  return split_payload(header, payload.size(), [&](std::size_t offset, std::size_t n, byte_buffer& out) {
    append_bytes(out, payload.data() + offset, n);
  });
}

} // namespace pe

#include "collectives/net/net_packet.hpp"

#include <algorithm>

namespace pe {

std::vector<net_packet> split_payload(const net_packet& header, const std::vector<char>& payload) {
  std::vector<net_packet> packets;
  std::size_t offset = 0;
  do {
    const std::size_t n = std::min(net_packet_bytes, payload.size() - offset);
    net_packet p = header;
    p.offset = offset;
    p.total = payload.size();
    p.bytes.assign(payload.begin() + static_cast<std::ptrdiff_t>(offset),
                   payload.begin() + static_cast<std::ptrdiff_t>(offset + n));
    packets.push_back(std::move(p));
    offset += n;
  } while (offset < payload.size());
  return packets;
}

} // namespace pe

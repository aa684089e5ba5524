// Fuzz target: a packet as CAF decodes it from a peer's message (binary_deserializer with
// net_packet's inspect, collectives/net/net_packet_wire.hpp). A decoded packet respects the
// size limits and survives encoding and decoding; the rest of the input is ignored.
#include <tuple>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "collectives/net/net_packet_wire.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pe::net_packet packet;
  caf::binary_deserializer source(nullptr, reinterpret_cast<const char*>(data), size);
  if (source(packet)) return 0; // refused: what a lying or garbled message must get
  pe::fuzz::require(packet.bytes.size() <= pe::net_packet_bytes, "a packet longer than net_packet_bytes decoded");
  pe::fuzz::require(packet.failure.size() <= pe::net_failure_bytes, "a failure longer than net_failure_bytes decoded");
  pe::fuzz::require(packet.label.size() <= pe::net_label_bytes, "a label longer than net_label_bytes decoded");
  // Lengths are varbyte-coded, which has several spellings of one value: a decoded packet
  // must survive encoding and decoding unchanged, not give back the very bytes.
  std::vector<char> encoded;
  caf::binary_serializer sink(nullptr, encoded);
  pe::fuzz::require(!sink(packet), "a decoded packet does not encode");
  pe::net_packet again;
  caf::binary_deserializer reread(nullptr, encoded);
  pe::fuzz::require(!reread(again) && reread.remaining() == 0, "an encoded packet does not decode");
  pe::fuzz::require(std::tie(again.channel, again.sequence, again.from, again.kind, again.root, again.label,
                             again.offset, again.total, again.failure, again.bytes) ==
                        std::tie(packet.channel, packet.sequence, packet.from, packet.kind, packet.root,
                                 packet.label, packet.offset, packet.total, packet.failure, packet.bytes),
                    "a packet changes through encoding and decoding");
  return 0;
}

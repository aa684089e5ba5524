// Fuzz target: what peers send, as this process decodes it: packets filed into a net_inbox
// (rank 0 of 3) and taken by collectives (whole, by header and piece, as notices), and the
// tensor messages of host exchanges (decode_tensors). The input (read from the front: byte_source) scripts a sequence of
// deliveries and takes with fuzzed header fields and bytes.
#include <chrono>
#include <cstring>
#include <vector>

#include "collectives/net/net_inbox.hpp"
#include "collectives/net/tensor_bytes.hpp"
#include "core/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using pe::fuzz::require;

std::uint64_t some_size(pe::fuzz::byte_source& in) {
  // Mostly small, sometimes a lie far beyond any message.
  return in.flag() ? in.in_range(0, 64) : in.in_range(0, UINT64_MAX);
}

pe::net_packet some_packet(pe::fuzz::byte_source& in) {
  pe::net_packet p;
  p.channel = static_cast<std::uint32_t>(in.in_range(0, 2));
  p.sequence = in.in_range(0, 4);
  p.from = static_cast<std::int32_t>(in.in_range_signed(-1, 3));
  p.kind = static_cast<std::int32_t>(in.in_range(0, 3));
  p.root = static_cast<std::int32_t>(in.in_range_signed(-1, 3));
  p.offset = some_size(in);
  p.total = some_size(in);
  if (in.in_range(0, 7) == 0) {
    const std::vector<char> why = in.bytes(in.in_range(0, 32));
    p.failure.assign(why.begin(), why.end());
  }
  const std::vector<char> payload = in.bytes(in.in_range(0, 64));
  p.bytes = pe::bytes_of(payload.data(), payload.size());
  return p;
}

/// A complete payload holds exactly its declared bytes.
void check_payload(const std::optional<pe::net_payload>& p) {
  require(!p || !p->failure.empty() || p->bytes.size() == p->total, "a taken payload's size differs from its total");
}

/// Decodes a tensor message; what decodes must encode back to the same bytes.
void check_tensors(const pe::byte_buffer& bytes) {
  std::vector<pe::tensor> tensors;
  try {
    tensors = pe::decode_tensors(bytes, "process rank 1");
  } catch (const pe::error&) {
    return;
  }
  std::vector<const pe::tensor*> views;
  for (const auto& t : tensors) views.push_back(&t);
  require(pe::encode_tensors(views) == bytes, "decoded tensors encode to other bytes");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pe::fuzz::byte_source in(data, size);
  if (in.flag()) {
    {
      const std::vector<char> rest = in.rest();
      check_tensors(pe::bytes_of(rest.data(), rest.size()));
    }
    return 0;
  }
  pe::net_inbox inbox(0, 3);
  for (int step = 0; step < 64 && in.remaining() > 0; ++step) {
    const auto channel = static_cast<std::uint32_t>(in.in_range(0, 2));
    const auto sequence = in.in_range(0, 4);
    const int from = static_cast<int>(in.in_range(1, 2));
    try {
      switch (in.in_range(0, 6)) {
      case 0:
      case 1:
      case 2: inbox.deliver(some_packet(in)); break;
      case 3: check_payload(inbox.take(channel, sequence, from)); break;
      case 4:
        if (auto h = inbox.header(channel, sequence, from)) {
          require(h->bytes.empty(), "a header carries bytes");
          if (auto piece = inbox.take_piece(channel, sequence, from, some_size(in)))
            require(piece->size() <= h->total, "a piece is larger than its payload");
        }
        break;
      case 5: check_payload(inbox.take_notice(channel, sequence, from)); break;
      default:
        check_payload(inbox.wait_take(channel, sequence, from, std::chrono::milliseconds(0)));
        break;
      }
    } catch (const pe::error&) {
      // A broken inbox or a timeout: what a lying peer must get.
    }
  }
  return 0;
}

#pragma once
// How net_packet crosses processes: its CAF inspect function. Includes CAF, so only the CAF
// transport (caf_transport.cpp) and the wire fuzz target include it.
#include <cstddef>
#include <type_traits>

#include <caf/deserializer.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/sec.hpp>
#include <caf/serializer.hpp>

#include "collectives/net/net_packet.hpp"

namespace pe {

/// A byte sequence (byte_buffer, std::string) that a peer's message may not make
/// longer than `limit`. CAF 0.17 loads a byte sequence by resizing it to the length the
/// message claims before checking that the bytes are there, so a peer claiming 4 GiB makes
/// the receiver allocate 4 GiB; this wrapper refuses a claim above the limit
/// before allocating anything.
template <class Bytes>
struct bounded_bytes {
  Bytes& bytes;
  std::size_t limit;
};

template <class Inspector, class Bytes>
typename Inspector::result_type inspect(Inspector& f, bounded_bytes<Bytes>& x) {
  if constexpr (Inspector::reads_state && !std::is_base_of_v<caf::serializer, Inspector>) {
    return f(x.bytes); // to_string and other readers that are not the wire
  } else if constexpr (Inspector::reads_state) {
    // The layout CAF gives a byte sequence (its length, then the raw bytes), written by hand
    // because CAF knows only std::vector<char> and std::string as byte sequences.
    std::size_t size = x.bytes.size();
    if (auto err = f.begin_sequence(size)) return err;
    if (size > 0)
      if (auto err = f.apply_raw(size, x.bytes.data())) return err;
    return f.end_sequence();
  } else {
    std::size_t size = 0;
    if (auto err = f.begin_sequence(size)) return err;
    if (size > x.limit) return caf::make_error(caf::sec::invalid_argument, "a byte sequence longer than its limit");
    x.bytes.resize(size);
    if (size > 0)
      if (auto err = f.apply_raw(size, x.bytes.data())) return err;
    return f.end_sequence();
  }
}

/// The wire format of net_packet: a small header, the failure and the payload as bytes
/// (never floats: reference.md §9), each no longer than its limit.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, net_packet& x) {
  return f(caf::meta::type_name("pe_net_packet"), x.channel, x.sequence, x.from, x.kind, x.root,
           bounded_bytes<std::string>{x.label, net_label_bytes}, x.offset, x.total, bounded_bytes<std::string>{x.failure, net_failure_bytes},
           bounded_bytes<byte_buffer>{x.bytes, net_packet_bytes});
}

} // namespace pe

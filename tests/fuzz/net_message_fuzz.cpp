// Fuzz target: what peers send, as this process decodes it: packets filed into a net_inbox
// (rank 0 of 3) and taken by collectives (whole, by header and piece, as notices), and the
// tensor messages of host exchanges (decode_tensors), the same bytes read as a peer's sparse
// rows and as its row counts with rows sent along (decode_rows, decode_row_counts). The input (read from the front: byte_source) scripts a sequence of
// deliveries and takes with fuzzed header fields and bytes.
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "collectives/net/net_inbox.hpp"
#include "collectives/net/row_payload.hpp"
#include "collectives/net/tensor_bytes.hpp"
#include "core/error.hpp"
#include "core/selected_rows.hpp"
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

/// Rows a peer sent, as decoded against this process's buffer: inside its table, of its width.
void check_decoded_rows(const std::vector<pe::tensor>& rows, const pe::tensor& mine) {
  require(rows.size() == 1, "decoded rows for another number of buffers");
  const pe::tensor& r = rows[0];
  require(r.sparse_rows() != nullptr && r.rank() == 2 && r.dim(1) == mine.dim(1), "decoded rows of another width");
  require(static_cast<std::int64_t>(r.sparse_rows()->rows().size()) == r.dim(0), "decoded rows and values disagree");
  for (std::int64_t row : r.sparse_rows()->rows())
    require(row >= 0 && row < mine.sparse_rows()->height(), "a decoded row outside the table");
}

/// The bytes as a peer's SELECTED_ROWS payload and as its row counts (rows sent along or
/// not), against this process's one buffer (width 2 in a table of 10 rows): a pe::error or
/// rows that fit the table, never a crash; counts sent with rows are the rows' number.
void check_rows(const pe::byte_buffer& bytes) {
  static pe::tensor mine = [] {
    pe::tensor t = pe::tensor::zeros(pe::dtype::fp32, {1, 2});
    t.set_sparse_rows(std::make_shared<const pe::selected_rows>(std::vector<std::int64_t>{3}, 10));
    return t;
  }();
  const std::vector<pe::tensor*> buffers{&mine};
  try {
    check_decoded_rows(pe::decode_rows(bytes, buffers, "process rank 1"), mine);
  } catch (const pe::error&) {
  }
  try {
    const pe::announced_rows a = pe::decode_row_counts(bytes, buffers, "process rank 1");
    require(a.counts.size() == 1 && a.counts[0] >= 0, "decoded counts for another number of buffers");
    if (a.rows) {
      check_decoded_rows(*a.rows, mine);
      require((*a.rows)[0].dim(0) == a.counts[0], "rows sent along disagree with their count");
    }
  } catch (const pe::error&) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pe::fuzz::byte_source in(data, size);
  if (in.flag()) {
    {
      const std::vector<char> rest = in.rest();
      const pe::byte_buffer bytes = pe::bytes_of(rest.data(), rest.size());
      check_tensors(bytes);
      check_rows(bytes);
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

#include "collectives/net/net_communicator.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "collectives/chunk_range.hpp"
#include "collectives/dense_rows.hpp"
#include "collectives/net/row_payload.hpp"
#include "collectives/rank_order_sum.hpp"
#include "core/error.hpp"
#include "core/selected_rows.hpp"
#include "core/steady_clock.hpp"

namespace pe {

namespace {

/// Throws unless every buffer holds FP32 values; returns their total size in bytes.
std::size_t check_buffers(const std::vector<tensor*>& buffers, const std::string& label) {
  std::size_t total = 0;
  for (const tensor* t : buffers) {
    if (!t->initialized() || t->type() != dtype::fp32)
      throw error(label + ": a buffer is missing or not FP32");
    total += t->bytes();
  }
  return total;
}

/// Calls fn(t, begin, n, at) for every part of the bytes [offset, offset + size) of the
/// buffers' concatenation, in order: bytes [begin, begin + n) of buffer t, which are bytes
/// [at, at + n) of the concatenation. A range of a fused bucket may span several buffers.
template <class Fn>
void for_each_part(const std::vector<tensor*>& buffers, std::size_t offset, std::size_t size, Fn&& fn) {
  std::size_t start = 0; // where the current buffer starts in the concatenation
  for (tensor* t : buffers) {
    if (start >= offset + size) break;
    const std::size_t lo = std::max(offset, start), hi = std::min(offset + size, start + t->bytes());
    if (lo < hi) fn(*t, lo - start, hi - lo, lo);
    start += t->bytes();
  }
}

/// The buffers' FP32 values, concatenated, as bytes.
byte_buffer pack(const std::vector<tensor*>& buffers, const std::string& label) {
  const std::size_t total = check_buffers(buffers, label);
  byte_buffer bytes;
  bytes.reserve(total); // appended to: no zeroing of bytes about to be overwritten
  for (const tensor* t : buffers) {
    append_bytes(bytes, t->raw(), t->bytes());
  }
  return bytes;
}

/// The buffers' values ([0, total) of their concatenation) as packets with `header`'s
/// fields, cut straight from the tensors.
std::vector<net_packet> packets_of(const net_packet& header, const std::vector<tensor*>& buffers, std::size_t total) {
  return split_payload(header, total, [&](std::size_t offset, std::size_t n, byte_buffer& out) {
    for_each_part(buffers, offset, n, [&](const tensor& t, std::size_t begin, std::size_t bytes, std::size_t) {
      append_bytes(out, static_cast<const char*>(t.raw()) + begin, bytes);
    });
  });
}

/// Writes `bytes` back over the buffers, in order; the sizes were checked.
void unpack(const byte_buffer& bytes, const std::vector<tensor*>& buffers) {
  std::size_t at = 0;
  for (tensor* t : buffers) {
    std::memcpy(t->raw(), bytes.data() + at, t->bytes());
    at += t->bytes();
  }
}

/// contributions[0] + contributions[1] + ... element by element, in that order
/// (rank_order_sum.hpp), over `bytes` bytes of FP32 values each, into `out` (which may be one
/// of them: each block is summed into a buffer first). The payloads are byte vectors cut at
/// multiples of 4 bytes, so their floats are aligned; checked rather than assumed.
void sum_in_order(const std::vector<const char*>& contributions, std::size_t bytes, char* out) {
  constexpr std::size_t block = 1024;
  std::vector<const float*> sources;
  for (const char* c : contributions) {
    if (reinterpret_cast<std::uintptr_t>(c) % alignof(float) != 0)
      throw error("a collective's exchange buffer is not aligned for FP32 values");
    sources.push_back(reinterpret_cast<const float*>(c));
  }
  const std::size_t n = bytes / sizeof(float);
  float sum[block];
  for (std::size_t b = 0; b < n; b += block) {
    const std::size_t m = std::min(block, n - b);
    sum_in_rank_order(sources, b, m, sum);
    std::memcpy(out + b * sizeof(float), sum, m * sizeof(float));
  }
}

} // namespace

namespace {

std::atomic<std::uint64_t> sent_payload_bytes{0};

} // namespace

std::uint64_t payload_bytes_sent() {
  return sent_payload_bytes.load(std::memory_order_relaxed);
}

void send_payload(net_transport& t, int to, const net_packet& header,
                  const byte_buffer& payload) {
  send_packets(t, to, split_payload(header, payload));
}

void send_packets(net_transport& t, int to, std::vector<net_packet> packets) {
  for (auto& packet : packets) send_packet(t, to, std::move(packet));
}

void send_packet(net_transport& t, int to, net_packet packet) {
  sent_payload_bytes.fetch_add(packet.bytes.size(), std::memory_order_relaxed);
  t.send(to, std::move(packet));
}

namespace {

/// What a collective's label says on every process alike: "reduce(w@GRAD)" of "reduce(w@GRAD)
/// to cpu:0" (graph labels name the variables, then a place that is this process's own
/// name for a rank). Sent in every packet and compared by the receiver.
std::string process_free_label(const std::string& label) {
  const auto close = label.find(')');
  return close == std::string::npos ? label : label.substr(0, close + 1);
}

/// Wire sequences per collective: step k of collective s travels as s * slots + k; the last
/// slot carries a process's failure, sent to every peer. A peer's payloads are taken in step
/// order: an all_gather's row counts are step 0 and its data steps come after
/// (exchange::first_step); a ring takes at most 2 (n - 1) steps for n < failure_slot / 2.
constexpr std::uint64_t slots = 64;
constexpr std::uint64_t failure_slot = slots - 1;

std::uint64_t wire(std::uint64_t sequence, std::uint64_t step) {
  return sequence * slots + step;
}

/// [begin, end) in floats of chunk c of n floats cut in `parts` (chunk_range's cuts, on any
/// element).
std::pair<std::size_t, std::size_t> chunk_of(std::size_t n, int c, int parts) {
  return chunk_range(n, static_cast<std::size_t>(c), static_cast<std::size_t>(parts));
}

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

} // namespace

/// The network stage of one collective on this process's lead place.
struct net_communicator::exchange {
  collective_call call;
  std::vector<tensor*> buffers; // the lead's
  bool started = false;
  bool ring = false;
  bool in_place = false;                       // ring: on the one buffer itself, not on `mine`
  byte_buffer mine;                            // ring, all_gather: this process's contribution, then the result
  int step = 0;                                // ring: steps done
  bool step_sent = false;                      // direct: the payload is sent; ring: step 0's chunk is
  bool failure_told = false;
  std::vector<std::optional<net_payload>> got; // direct: by process rank
  bool headers_checked = false;                // summing: every peer's header (ring: this step's)
  std::size_t packet = 0;                      // summing: packets summed so far (ring: in this step)
  std::vector<std::optional<byte_buffer>> pieces; // direct, summing: this packet, by rank
  std::vector<int> awaiting;                   // the processes the last poll lacked data of
  // all_gather: the row counts every process announced (step 0), then the choice. With
  // the dense fallback the stage runs as an all-reduce of `tables` (buffers point at them)
  // and writes the touched rows into `gathered` (the lead's own buffers) at the end.
  bool gathering = false;
  std::uint64_t first_step = 0;                // the wire step of the data's step 0
  bool counts_sent = false;
  std::vector<std::optional<net_payload>> counts;  // by process rank
  std::vector<std::vector<std::int64_t>> announced; // [process][buffer], once all are here
  bool rows_sent_early = false;                // this process sent its rows with its counts
  std::vector<bool> early_from;                // by process rank: its rows came with its counts
  std::vector<std::vector<tensor>> theirs;     // by process rank: its rows, decoded
  bool dense = false;
  std::vector<tensor> tables;
  std::vector<tensor*> gathered;
};

net_communicator::net_communicator(net_transport& transport, std::uint32_t channel, int local_ranks,
                                   std::size_t ring_bytes)
    : staged_communicator(transport.inbox().rank(), transport.inbox().size(), local_ranks),
      transport_(transport), channel_(channel), ring_bytes_(ring_bytes) {
  if (channel == 0) throw error("net_communicator: channel 0 is reserved for host exchanges");
  if (transport.inbox().size() >= static_cast<int>(failure_slot / 2))
    throw error("net_communicator: at most " + std::to_string(failure_slot / 2 - 1) + " processes");
}

void net_communicator::launch_exchange(const collective_call& call, std::vector<tensor*> buffers,
                                       stream& on) {
  // The exchange packs and unpacks the buffers as host memory.
  if (on.where().type != place::kind::cpu)
    throw error(call.label + ": the cross-process communicator runs on CPU places, not on " +
                to_string(on.where()));
  auto x = std::make_shared<exchange>();
  x->call = call;
  x->buffers = std::move(buffers);
  x->got.resize(static_cast<std::size_t>(transport_.inbox().size()));
  x->counts.resize(x->got.size());
  x->gathering = call.what == collective_call::kind::all_gather;
  x->pieces.resize(x->got.size());
  on.enqueue_polled([this, x](bool failed) { return poll(*x, failed); });
}

net_packet net_communicator::header_of(const exchange& x, std::uint64_t step) const {
  net_packet header;
  header.channel = channel_;
  header.sequence = wire(x.call.sequence, step);
  header.from = transport_.inbox().rank();
  header.kind = static_cast<std::int32_t>(x.call.what);
  header.root = x.call.root;
  header.label = process_free_label(x.call.label);
  return header;
}

bool net_communicator::poll(exchange& x, bool stream_failed) {
  using kind = collective_call::kind;
  const collective_call& call = x.call;
  const int me = transport_.inbox().rank(), processes = transport_.inbox().size();
  try {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (aborted_) throw error(*aborted_);
    }
    if (!x.started) {
      x.started = true;
      if (stream_failed) throw error("skipped after an earlier failure on process rank " + std::to_string(me));
      // The direct exchange sends packets cut from the buffers and sums into them; only the
      // ring (its working copy) and all_gather (encoded rows) need the payload in one piece.
      if (x.gathering) {
        x.rows_sent_early = expects_gather(x);
        x.mine = encode_row_counts(x.buffers, call.label, x.rows_sent_early); // what step 0 announces
      } else {
        const std::size_t total = check_buffers(x.buffers, call.label);
        x.ring = call.what == kind::all_reduce && processes >= 3 && total >= ring_bytes_;
        if (x.ring) start_ring(x);
      }
    }
    for (int p = 0; p < processes; ++p)
      if (p != me)
        if (auto failed = transport_.inbox().take_notice(channel_, wire(call.sequence, failure_slot), p))
          throw error("process rank " + std::to_string(p) + " failed: " + failed->failure);
    x.awaiting.clear();
    const bool finished = x.gathering ? gather(x) : x.ring ? ring(x) : direct(x);
    publish_awaited(x, finished ? std::vector<int>{} : x.awaiting);
    return finished;
  } catch (const std::exception& e) {
    publish_awaited(x, {});
    // The peers may be waiting for this process: tell them why it stops.
    if (!x.failure_told) {
      x.failure_told = true;
      net_packet failure = header_of(x, failure_slot);
      failure.failure = std::string(e.what()).substr(0, net_failure_bytes);
      for (int p = 0; p < processes; ++p)
        if (p != me) send_payload(transport_, p, failure, {});
    }
    throw error(call.label + ": " + e.what());
  }
}

void net_communicator::check(const exchange& x, int from, const net_payload& got,
                             std::optional<std::size_t> expected) const {
  using kind = collective_call::kind;
  const collective_call& call = x.call;
  const std::string peer = "process rank " + std::to_string(from);
  if (!got.failure.empty()) throw error(peer + " failed: " + got.failure);
  // Kind, root and label (the variable) first: a desync names both calls, whatever the sizes.
  const bool known = got.kind >= 0 && got.kind <= static_cast<std::int32_t>(kind::all_gather);
  const std::string mine = process_free_label(call.label);
  if (got.kind != static_cast<std::int32_t>(call.what) || got.root != call.root || got.label != mine)
    throw error(peer + " ran collective #" + std::to_string(call.sequence) + " as " +
                (known ? to_string(static_cast<kind>(got.kind)) : "kind " + std::to_string(got.kind)) + " " +
                got.label + " with root " + std::to_string(got.root) + ", this process as " +
                to_string(call.what) + " " + mine + " with root " + std::to_string(call.root));
  // Dense payloads are FP32 values (check_buffers refuses any other dtype on either side), so
  // the byte count is the element count, named as such.
  auto values = [](std::uint64_t bytes) {
    return std::to_string(bytes) + " bytes (" + std::to_string(bytes / sizeof(float)) + " FP32 values)";
  };
  if (expected && got.total != *expected)
    throw error(peer + " sent " + values(got.total) + " for collective #" + std::to_string(call.sequence) + " " +
                call.label + " where this process has " + values(*expected));
}

bool net_communicator::direct(exchange& x) {
  using kind = collective_call::kind;
  const collective_call& call = x.call;
  net_inbox& inbox = transport_.inbox();
  const int me = inbox.rank(), processes = inbox.size();
  const int root_process = call.root / local_ranks();
  const bool sends_all = call.what == kind::all_reduce ||
                         (call.what == kind::broadcast && me == root_process);
  const bool receives = call.what == kind::all_reduce ||
                        (call.what == kind::reduce && me == root_process) ||
                        (call.what == kind::broadcast && me != root_process);
  const std::size_t expected = check_buffers(x.buffers, call.label);
  if (!x.step_sent) {
    x.step_sent = true;
    // Sent before anything is summed into the buffers.
    for (int p = 0; p < processes; ++p)
      if (p != me && (sends_all || (!receives && p == root_process)))
        send_packets(transport_, p, packets_of(header_of(x, x.first_step), x.buffers, expected));
  }
  if (!receives) return true;
  if (call.what != kind::broadcast && expected > 0) return sum_as_packets_arrive(x, expected);

  // A broadcast (the root's process's payload), or payloads of no bytes: whole payloads.
  bool complete = true;
  for (int p = 0; p < processes; ++p) {
    if (p == me || (call.what == kind::broadcast && p != root_process)) continue;
    auto& slot = x.got[static_cast<std::size_t>(p)];
    if (!slot) slot = inbox.take(channel_, wire(call.sequence, x.first_step), p);
    if (!slot) complete = false, x.awaiting.push_back(p);
  }
  if (!complete) return false;

  for (int p = 0; p < processes; ++p) {
    const auto& got = x.got[static_cast<std::size_t>(p)];
    if (p == me || !got) continue;
    check(x, p, *got, expected);
    if (call.what == kind::broadcast) unpack(got->bytes, x.buffers);
  }
  return true; // a sum of empty payloads leaves the (empty) buffers as they are
}

bool net_communicator::sum_as_packets_arrive(exchange& x, std::size_t expected) {
  net_inbox& inbox = transport_.inbox();
  const int me = inbox.rank(), processes = inbox.size();
  const std::uint64_t sequence = wire(x.call.sequence, x.first_step);
  if (!x.headers_checked) {
    for (int p = 0; p < processes; ++p) {
      if (p == me) continue;
      auto header = inbox.header(channel_, sequence, p);
      if (!header) {
        x.awaiting.push_back(p);
        continue;
      }
      check(x, p, *header, expected);
    }
    if (!x.awaiting.empty()) return false;
    x.headers_checked = true;
  }
  // The senders cut their payloads at the same offsets: packet k of every process is summed
  // (in process order) as soon as it is here, while the later packets still travel.
  const std::size_t packets = (expected + net_packet_bytes - 1) / net_packet_bytes;
  for (; x.packet < packets; ++x.packet) {
    const std::size_t offset = x.packet * net_packet_bytes;
    const std::size_t bytes = std::min(net_packet_bytes, expected - offset);
    for (int p = 0; p < processes; ++p) {
      if (p == me) continue;
      auto& piece = x.pieces[static_cast<std::size_t>(p)];
      if (!piece) piece = take_packet(sequence, p, offset, bytes);
      if (!piece) x.awaiting.push_back(p);
    }
    if (!x.awaiting.empty()) return false;
    // Summed straight into this process's buffers, part by part: its own values are read
    // where they are (its packets were copied out before), and sum_in_order sums each block
    // into a scratch block before writing it, so reading and writing one buffer is safe.
    for_each_part(x.buffers, offset, bytes, [&](tensor& t, std::size_t begin, std::size_t n, std::size_t at) {
      char* own = static_cast<char*>(t.raw()) + begin;
      std::vector<const char*> in_order;
      for (int p = 0; p < processes; ++p)
        in_order.push_back(p == me ? own : x.pieces[static_cast<std::size_t>(p)]->data() + (at - offset));
      sum_in_order(in_order, n, own);
    });
    for (auto& piece : x.pieces) piece.reset();
  }
  return true;
}

bool net_communicator::ring(exchange& x) {
  net_inbox& inbox = transport_.inbox();
  const int me = inbox.rank(), n = inbox.size();
  const int left = mod(me - 1, n), right = mod(me + 1, n);
  const int steps = 2 * (n - 1);
  char* const values = x.in_place ? static_cast<char*>(x.buffers[0]->raw()) : x.mine.data();
  const std::size_t floats = (x.in_place ? x.buffers[0]->bytes() : x.mine.size()) / sizeof(float);
  // Steps 0 .. n-2 reduce-scatter: chunk c accumulates around the ring from process c, so
  // process c-1 ends with its sum in the order c, c+1, ...; steps n-1 .. 2n-3 all-gather
  // the finished chunks, so every process ends with the same bytes. What a process receives
  // at step s is what it sends at step s + 1, so each packet goes on to the right as soon as
  // it is summed (or copied): the steps overlap packet by packet instead of waiting for
  // whole chunks.
  auto received_chunk = [&](int s) { return s < n - 1 ? mod(me - s - 1, n) : mod(me - (s - (n - 1)), n); };
  auto chunk_bytes = [&](int c) {
    const auto [b, e] = chunk_of(floats, c, n);
    return std::pair<std::size_t, std::size_t>{b * sizeof(float), (e - b) * sizeof(float)};
  };
  auto send_range = [&](int s, std::size_t begin, std::size_t size) {
    const char* chunk = values + begin;
    send_packets(transport_, right, split_payload(header_of(x, x.first_step + static_cast<std::uint64_t>(s)), size,
                                                  [chunk](std::size_t offset, std::size_t bytes, byte_buffer& out) {
                                                    append_bytes(out, chunk + offset, bytes);
                                                  }));
  };
  if (!x.step_sent) { // step 0: this process's own chunk
    x.step_sent = true;
    const auto [begin, size] = chunk_bytes(mod(me, n));
    send_range(0, begin, size);
  }
  while (x.step < steps) {
    const int s = x.step;
    const bool scatter = s < n - 1, forwards = s + 1 < steps;
    const auto [begin, size] = chunk_bytes(received_chunk(s));
    const std::uint64_t sequence = wire(x.call.sequence, x.first_step + static_cast<std::uint64_t>(s));
    if (size == 0) { // an empty chunk travels as one empty payload
      auto got = inbox.take(channel_, sequence, left);
      if (!got) {
        x.awaiting.push_back(left);
        return false;
      }
      check(x, left, *got, 0);
      if (forwards) send_range(s + 1, begin, 0);
    } else {
      if (!x.headers_checked) {
        auto header = inbox.header(channel_, sequence, left);
        if (!header) {
          x.awaiting.push_back(left);
          return false;
        }
        check(x, left, *header, size);
        x.headers_checked = true;
      }
      for (; x.packet * net_packet_bytes < size; ++x.packet) {
        const std::size_t offset = x.packet * net_packet_bytes;
        const std::size_t bytes = std::min(net_packet_bytes, size - offset);
        auto piece = take_packet(sequence, left, offset, bytes);
        if (!piece) {
          x.awaiting.push_back(left);
          return false;
        }
        char* into = values + begin + offset;
        // The received bytes become the packet sent on: a partial sum that only travels
        // (reduce-scatter before its last step) is summed into them and never stored here;
        // the chunk's final sum and the gathered chunks are stored and also sent on.
        if (scatter) sum_in_order({piece->data(), into}, bytes, piece->data());
        if (!scatter || s == n - 2) std::memcpy(into, piece->data(), bytes);
        if (forwards) {
          net_packet next = header_of(x, x.first_step + static_cast<std::uint64_t>(s + 1));
          next.offset = offset;
          next.total = size;
          next.bytes = std::move(*piece);
          send_packet(transport_, right, std::move(next));
        }
      }
    }
    ++x.step;
    x.packet = 0;
    x.headers_checked = false;
  }
  if (!x.in_place) unpack(x.mine, x.buffers);
  return true;
}

void net_communicator::start_ring(exchange& x) {
  // One buffer (an unfused gradient, a sparse table's dense fallback) is the ring's working
  // copy itself; a fused bucket's buffers are packed into one and unpacked at the end.
  x.in_place = x.buffers.size() == 1;
  if (!x.in_place) x.mine = pack(x.buffers, x.call.label);
}

std::optional<byte_buffer> net_communicator::take_packet(std::uint64_t sequence, int from, std::size_t offset,
                                                         std::size_t bytes) {
  auto piece = transport_.inbox().take_piece(channel_, sequence, from, offset);
  if (piece && piece->size() != bytes)
    throw error("process rank " + std::to_string(from) + " cut its payload at other offsets (" +
                std::to_string(piece->size()) + " bytes at offset " + std::to_string(offset) + ")");
  return piece;
}

void net_communicator::publish_awaited(const exchange& x, std::vector<int> processes) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (processes.empty()) {
    awaited_.erase(x.call.sequence);
    return;
  }
  network_wait& w = awaited_[x.call.sequence];
  if (w.label.empty()) w = {x.call.sequence, x.call.label, {}, steady_ns()};
  w.processes = std::move(processes);
}

std::optional<std::vector<staged_communicator::network_wait>> net_communicator::network_waits() const {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<network_wait> out;
  for (const auto& [sequence, w] : awaited_) out.push_back(w);
  return out;
}

bool net_communicator::take_whole(exchange& x, std::uint64_t step, std::vector<std::optional<net_payload>>& got,
                                  const std::vector<bool>* skip) {
  net_inbox& inbox = transport_.inbox();
  const int me = inbox.rank(), processes = inbox.size();
  bool complete = true;
  for (int p = 0; p < processes; ++p) {
    if (p == me || (skip != nullptr && (*skip)[static_cast<std::size_t>(p)])) continue;
    auto& slot = got[static_cast<std::size_t>(p)];
    if (!slot) slot = inbox.take(channel_, wire(x.call.sequence, step), p);
    if (!slot) complete = false, x.awaiting.push_back(p);
  }
  return complete;
}

void net_communicator::send_to_all(const exchange& x, std::uint64_t step, const byte_buffer& payload) {
  const int me = transport_.inbox().rank(), processes = transport_.inbox().size();
  for (int p = 0; p < processes; ++p)
    if (p != me) send_payload(transport_, p, header_of(x, step), payload);
}

bool net_communicator::expects_gather(const exchange& x) const {
  const int processes = transport_.inbox().size();
  sparse_exchange_cost guess;
  for (const tensor* t : x.buffers) {
    if (!t->initialized() || !t->sparse_rows() || t->rank() != 2) return false; // refused when encoded
    guess.add(t->dim(0) * processes, t->sparse_rows()->height(), t->dim(1));
  }
  return !guess.takes_dense(x.call.exchange);
}

bool net_communicator::choose_exchange(exchange& x) {
  const int me = transport_.inbox().rank(), processes = transport_.inbox().size();
  if (!x.counts_sent) {
    x.counts_sent = true;
    send_to_all(x, 0, x.mine);
  }
  if (!take_whole(x, 0, x.counts)) return false;
  x.announced.resize(static_cast<std::size_t>(processes));
  x.early_from.assign(static_cast<std::size_t>(processes), false);
  x.theirs.resize(static_cast<std::size_t>(processes));
  sparse_exchange_cost cost;
  for (int p = 0; p < processes; ++p) {
    const auto at = static_cast<std::size_t>(p);
    auto& rows = x.announced[at];
    if (p == me) {
      for (const tensor* t : x.buffers) rows.push_back(t->dim(0));
      continue;
    }
    net_payload& got = *x.counts[at];
    check(x, p, got, std::nullopt);
    announced_rows a = decode_row_counts(got.bytes, x.buffers, "process rank " + std::to_string(p));
    got.bytes = {}; // decoded: the rows are copies
    rows = std::move(a.counts);
    if (a.rows) x.early_from[at] = true, x.theirs[at] = std::move(*a.rows);
  }
  for (std::size_t v = 0; v < x.buffers.size(); ++v) {
    std::int64_t rows = 0;
    for (const auto& process : x.announced) rows += process[v];
    cost.add(rows, x.buffers[v]->sparse_rows()->height(), x.buffers[v]->dim(1));
  }
  x.dense = cost.takes_dense(x.call.exchange);
  if (x.dense) {
    // The same stage as an all-reduce of this process's table: every process chose it.
    note_dense_fallback(x.call.sequence);
    x.gathered = x.buffers;
    x.buffers.clear();
    for (const tensor* t : x.gathered) {
      tensor& table = x.tables.emplace_back(dense_rows_table(t->sparse_rows()->height(), t->dim(1), t->where()));
      add_rows_densely(*t, table);
    }
    for (tensor& table : x.tables) x.buffers.push_back(&table);
    x.call.what = collective_call::kind::all_reduce;
    x.ring = processes >= 3 && check_buffers(x.buffers, x.call.label) >= ring_bytes_;
    x.mine.clear(); // the direct stage reads the tables
    x.theirs.clear(); // rows sent early are not needed
    if (x.ring) start_ring(x);
    x.step_sent = false;
  } else {
    // Rows this process sent with its counts are not sent again.
    x.mine = x.rows_sent_early ? byte_buffer{} : encode_rows(x.buffers, x.call.label);
    x.step_sent = x.rows_sent_early;
  }
  x.first_step = 1;
  return true;
}

bool net_communicator::gather(exchange& x) {
  if (x.announced.empty() && !choose_exchange(x)) return false;
  if (x.dense) {
    if (!(x.ring ? ring(x) : direct(x))) return false;
    for (std::size_t v = 0; v < x.gathered.size(); ++v)
      *x.gathered[v] = touched_rows(x.tables[v], x.gathered[v]->where());
    return true;
  }
  const int me = transport_.inbox().rank(), processes = transport_.inbox().size();
  if (!x.step_sent) {
    x.step_sent = true;
    send_to_all(x, x.first_step, x.mine);
  }
  if (!take_whole(x, x.first_step, x.got, &x.early_from)) return false;
  auto& theirs = x.theirs;
  for (int p = 0; p < processes; ++p) {
    const auto at = static_cast<std::size_t>(p);
    if (p == me || x.early_from[at]) continue;
    const net_payload& got = *x.got[at];
    check(x, p, got, std::nullopt);
    const std::string peer = "process rank " + std::to_string(p);
    auto& rows = theirs[at] = decode_rows(got.bytes, x.buffers, peer);
    for (std::size_t v = 0; v < rows.size(); ++v) expect_announced(peer, v, x.announced[at][v], rows[v]);
  }
  for (std::size_t v = 0; v < x.buffers.size(); ++v) {
    std::vector<const tensor*> in_order;
    for (int p = 0; p < processes; ++p)
      in_order.push_back(p == me ? x.buffers[v] : &theirs[static_cast<std::size_t>(p)][v]);
    tensor all = concat_selected_rows(in_order, x.buffers[v]->where());
    *x.buffers[v] = std::move(all);
  }
  return true;
}

void net_communicator::abort() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!aborted_) aborted_ = "the communicator was aborted (the executor is being destroyed)";
  }
  abort_local_stages(); // wakes the parked stages, this one's included
}

} // namespace pe

#include "collectives/net/net_inbox.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "core/error.hpp"

namespace pe {

namespace {

std::string where(std::uint32_t channel, std::uint64_t sequence) {
  return (channel == 0 ? std::string("host exchange #") : "collective #") + std::to_string(sequence) +
         (channel == 0 ? "" : " of communicator " + std::to_string(channel));
}

} // namespace

net_inbox::net_inbox(int rank, int size, std::function<void()> changed)
    : rank_(rank), size_(size), changed_(std::move(changed)) {
  if (size < 1 || rank < 0 || rank >= size)
    throw error("net_inbox: rank " + std::to_string(rank) + " outside a world of " +
                std::to_string(size) + " processes");
}

std::optional<std::string> net_inbox::check(const net_packet& p) const {
  if (p.from < 0 || p.from >= size_ || p.from == rank_)
    return "a packet claims to come from process rank " + std::to_string(p.from) + " (this is rank " +
           std::to_string(rank_) + " of " + std::to_string(size_) + ")";
  const std::string peer = "process rank " + std::to_string(p.from);
  if (p.offset > p.total || p.bytes.size() > p.total - p.offset)
    return peer + " sent bytes [" + std::to_string(p.offset) + ", " +
           std::to_string(p.offset + p.bytes.size()) + ") of a " + std::to_string(p.total) +
           "-byte payload for " + where(p.channel, p.sequence);
  if (p.bytes.empty() && p.total > 0)
    return peer + " sent an empty packet of a " + std::to_string(p.total) + "-byte payload";
  if (auto t = taken_.find({p.channel, p.from}); t != taken_.end() && p.sequence <= t->second)
    return peer + " sent " + where(p.channel, p.sequence) + " after #" + std::to_string(t->second) +
           " was complete: packets out of order";
  auto it = pending_.find({p.channel, p.sequence, p.from});
  if (it == pending_.end()) return std::nullopt;
  const assembly& a = it->second;
  if (a.total != p.total || a.kind != p.kind || a.root != p.root || a.failure != p.failure ||
      a.label != p.label)
    return peer + " sent packets of " + where(p.channel, p.sequence) +
           " that disagree on the payload's size, kind, root or label";
  if (a.received + p.bytes.size() > a.total)
    return peer + " sent more than the " + std::to_string(a.total) + " bytes of " +
           where(p.channel, p.sequence);
  // Pieces must not overlap: then pieces whose sizes add up to the total tile it.
  const std::uint64_t end = p.offset + p.bytes.size();
  auto next = a.extents.lower_bound(p.offset);
  const bool overlaps_next = next != a.extents.end() && next->first < std::max(end, p.offset + 1);
  const bool overlaps_previous =
      next != a.extents.begin() && std::prev(next)->first + std::prev(next)->second > p.offset;
  if (overlaps_next || overlaps_previous)
    return peer + " sent bytes at offset " + std::to_string(p.offset) + " of " +
           where(p.channel, p.sequence) + " twice";
  return std::nullopt;
}

void net_inbox::deliver(net_packet p) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    // After a loss, packets still on their way are filed for loss_grace (wait_take may still
    // want them); after a lie, or later, nothing more is.
    const bool late = broken_ && std::chrono::steady_clock::now() < broken_at_ + loss_grace;
    if (broken_ && !late) return;
    if (auto lie = check(p)) {
      if (!broken_) broken_ = *lie;
    } else {
      assembly& a = pending_[{p.channel, p.sequence, p.from}];
      a.kind = p.kind;
      a.root = p.root;
      a.label = std::move(p.label);
      a.total = p.total;
      a.failure = std::move(p.failure);
      a.received += p.bytes.size();
      if (!p.bytes.empty()) {
        a.extents.emplace(p.offset, p.bytes.size());
        a.pieces.emplace(p.offset, std::move(p.bytes));
      }
    }
  }
  notify();
}

void net_inbox::fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (broken_) return;
    broken_ = why;
    broken_at_ = std::chrono::steady_clock::now();
  }
  notify();
}

std::optional<std::string> net_inbox::broken() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return broken_;
}

void net_inbox::notify() {
  arrived_.notify_all();
  if (changed_) changed_();
}

std::optional<net_payload> net_inbox::take_locked(const key& k, bool in_order) {
  auto it = pending_.find(k);
  // A payload that arrived complete (and passed every check) is still taken once the inbox
  // broke: a peer that finished sends its last payload and exits, and the news of its exit
  // may overtake the taker (the job's closing barrier). Anything still missing fails.
  const bool complete = it != pending_.end() && it->second.received == it->second.total;
  if (broken_ && !complete) throw error(*broken_);
  if (it == pending_.end() && !in_order) return std::nullopt;
  if (it == pending_.end()) {
    // Everything a peer sends is taken in sequence order: an older payload still here means
    // the peer ran something this process skipped, and waiting would never end.
    const auto& [channel, sequence, from] = k;
    for (auto p = pending_.lower_bound({channel, 0, 0}); p != pending_.end(); ++p) {
      const auto& [c, s, f] = p->first;
      if (c != channel || s >= sequence) break;
      if (f == from && !p->second.failure.empty())
        throw error(*(broken_ = "process rank " + std::to_string(from) + " failed: " + p->second.failure));
      if (f == from)
        throw error(*(broken_ = "process rank " + std::to_string(from) + " sent " + where(c, s) +
                                ", which this process never ran (it waits for #" +
                                std::to_string(sequence) + "): the processes issue collectives in "
                                "different orders"));
    }
    return std::nullopt;
  }
  if (it->second.received < it->second.total) return std::nullopt;
  assembly& a = it->second;
  // A reader that took pieces (take_piece) owns the rest too: whole, it would miss them.
  if (a.consumed > 0)
    throw error(where(std::get<0>(k), std::get<1>(k)) + " from process rank " +
                std::to_string(std::get<2>(k)) + " is being taken packet by packet (" +
                std::to_string(a.consumed) + " of " + std::to_string(a.total) +
                " bytes so far); it cannot also be taken whole");
  // Non-overlapping pieces within [0, total) whose sizes add up to total tile it exactly.
  // One piece is the payload itself (moved, not copied); byte_buffer leaves the bytes it
  // sizes unwritten, and the pieces write every one of them.
  net_payload out{a.kind, a.root, std::move(a.failure), {}, a.total, std::move(a.label)};
  if (a.pieces.size() == 1 && a.pieces.begin()->first == 0) {
    out.bytes = std::move(a.pieces.begin()->second);
  } else {
    out.bytes.resize(a.total);
    for (auto& [offset, piece] : a.pieces)
      std::memcpy(out.bytes.data() + offset, piece.data(), piece.size());
  }
  pending_.erase(it);
  auto& last = taken_[{std::get<0>(k), std::get<2>(k)}];
  last = std::max(last, std::get<1>(k));
  return out;
}

std::optional<net_payload> net_inbox::take(std::uint32_t channel, std::uint64_t sequence, int from) {
  std::lock_guard<std::mutex> guard(mutex_);
  return take_locked({channel, sequence, from}, true);
}

std::optional<net_payload> net_inbox::header(std::uint32_t channel, std::uint64_t sequence, int from) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (broken_) throw error(*broken_);
  auto it = pending_.find({channel, sequence, from});
  if (it == pending_.end()) return std::nullopt;
  const assembly& a = it->second;
  return net_payload{a.kind, a.root, a.failure, {}, a.total, a.label};
}

std::optional<byte_buffer> net_inbox::take_piece(std::uint32_t channel, std::uint64_t sequence,
                                                 int from, std::uint64_t offset) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (broken_) throw error(*broken_);
  const key k{channel, sequence, from};
  auto it = pending_.find(k);
  if (it == pending_.end()) return std::nullopt;
  assembly& a = it->second;
  auto piece = a.pieces.find(offset);
  if (piece == a.pieces.end()) {
    if (a.received < a.total) return std::nullopt;
    broken_ = "process rank " + std::to_string(from) + " sent all " + std::to_string(a.total) +
              " bytes of " + where(channel, sequence) + " but none at offset " + std::to_string(offset);
    throw error(*broken_);
  }
  byte_buffer bytes = std::move(piece->second);
  a.pieces.erase(piece);
  a.consumed += bytes.size();
  if (a.consumed == a.total) {
    pending_.erase(it);
    auto& last = taken_[{channel, from}];
    last = std::max(last, sequence);
  }
  return bytes;
}

std::optional<net_payload> net_inbox::take_notice(std::uint32_t channel, std::uint64_t sequence,
                                                  int from) {
  std::lock_guard<std::mutex> guard(mutex_);
  return take_locked({channel, sequence, from}, false);
}

net_payload net_inbox::wait_take(std::uint32_t channel, std::uint64_t sequence, int from,
                                 std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const key k{channel, sequence, from};
  for (;;) {
    try {
      if (auto p = take_locked(k, true)) return std::move(*p);
    } catch (const error&) {
      // Broken: the payload may still be on its way for a moment (see loss_grace).
      const auto now = std::chrono::steady_clock::now();
      if (!broken_ || now >= broken_at_ + loss_grace || now >= deadline) throw;
      arrived_.wait_until(lock, std::min(deadline, broken_at_ + loss_grace));
      continue;
    }
    if (arrived_.wait_until(lock, deadline) == std::cv_status::timeout) {
      if (auto p = take_locked(k, true)) return std::move(*p);
      throw error("process rank " + std::to_string(from) + " sent nothing for " +
                  where(channel, sequence) + " in " + std::to_string(timeout.count()) + " ms");
    }
  }
}

} // namespace pe

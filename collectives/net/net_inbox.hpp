#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/net/net_packet.hpp"

namespace pe {

/// Where the packets other processes send to this one wait until the collective or host
/// exchange they belong to takes them. Thread-safe: the network thread delivers, stream
/// threads poll with take(), host threads block in wait_take().
///
/// Everything a peer sends is checked here, because a peer may be broken or lie: its
/// rank, the packet's bounds and its order. A packet that fails a check breaks the inbox
/// with an error naming the peer, and every waiter fails with it (no crash, no hang, no
/// allocation sized by a header: a payload is assembled from the bytes that arrived).
class net_inbox {
 public:
  /// `changed` runs after every delivery and failure (outside the lock): it wakes the
  /// stream threads that poll.
  net_inbox(int rank, int size, std::function<void()> changed = {});

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Files one packet from process `p.from`; the transport has checked that the
  /// connection it came on belongs to that rank.
  void deliver(net_packet p);

  /// Breaks the inbox (a peer was lost, or lied): every take of a payload not complete yet
  /// fails with `why` from now on (complete ones are still taken: a finished peer's last
  /// payload may arrive just before the news that it exited). The first reason sticks.
  void fail(const std::string& why);

  std::optional<std::string> broken() const;

  /// The complete payload process `from` sent for (channel, sequence), removed from the
  /// inbox; nullopt while packets are missing. Throws pe::error when the inbox is broken,
  /// and breaks it when `from` sent an older payload of the channel that was never taken
  /// (the processes run different sequences: waiting would never end).
  std::optional<net_payload> take(std::uint32_t channel, std::uint64_t sequence, int from);

  /// For readers that consume a payload packet by packet (summing while the rest arrives):
  /// its kind, root, size and failure (no bytes) once its first packet arrived, else nullopt.
  std::optional<net_payload> header(std::uint32_t channel, std::uint64_t sequence, int from);

  /// Moves out the packet at `offset` of the payload if it arrived; the payload counts as
  /// taken once its last byte is (take and wait_take then refuse it: it is taken in pieces). Throws pe::error when the inbox is broken, and breaks it
  /// when the payload's bytes all arrived without one at `offset` (the peer lied).
  std::optional<byte_buffer> take_piece(std::uint32_t channel, std::uint64_t sequence, int from,
                                        std::uint64_t offset);

  /// Like take, for a payload that may never come (a peer's failure notice): no order check.
  std::optional<net_payload> take_notice(std::uint32_t channel, std::uint64_t sequence, int from);

  /// Like take, but blocks until the payload is complete. Throws pe::error when the inbox
  /// broke more than `loss_grace` ago (a finished peer's last payload may travel another
  /// route than the news of its exit, and arrive just after it), or when nothing completes
  /// it for `timeout`.
  net_payload wait_take(std::uint32_t channel, std::uint64_t sequence, int from,
                        std::chrono::milliseconds timeout);

 private:
  using key = std::tuple<std::uint32_t, std::uint64_t, int>; // channel, sequence, from

  struct assembly {
    std::int32_t kind = 0;
    std::int32_t root = 0;
    std::uint64_t total = 0;
    std::uint64_t received = 0;
    std::uint64_t consumed = 0; // bytes moved out by take_piece
    std::string failure;
    std::string label;
    std::map<std::uint64_t, byte_buffer> pieces; // by offset, not yet moved out
    /// offset -> size of every piece that arrived, moved out or not: a peer that sends a
    /// piece again after take_piece moved it out overlaps it here.
    std::map<std::uint64_t, std::uint64_t> extents;
  };

  /// The reason `p` is a lie, or nullopt; call with mutex_ held.
  std::optional<std::string> check(const net_packet& p) const;
  std::optional<net_payload> take_locked(const key& k, bool in_order);
  void notify();

  int rank_;
  int size_;
  std::function<void()> changed_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<key, assembly> pending_;
  /// Per (channel, from): the highest sequence taken so far; older packets are out of order.
  std::map<std::pair<std::uint32_t, int>, std::uint64_t> taken_;
  std::optional<std::string> broken_;
  std::chrono::steady_clock::time_point broken_at_; // when broken_ was set

 public:
  /// How long wait_take still waits for a payload after the inbox broke.
  static constexpr std::chrono::milliseconds loss_grace{500};
};

} // namespace pe

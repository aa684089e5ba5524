#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/net/staged_communicator.hpp"
#include "collectives/net/net_transport.hpp"

namespace pe {

/// The communicator of CPU places spread over several processes: global rank = process
/// rank x local ranks + local index, as rank_model defines it.
///
/// Each collective runs in the three stages of staged_communicator: the local places reduce in
/// memory to one lead place (in local rank order); the lead exchanges one payload per
/// process over `transport` and sums the processes' contributions in process order; the
/// lead's result goes back to the local places. So one transfer per process and collective, and every process
/// computes the same sums in the same order: results are bit-identical on every process
/// and from run to run. They differ from a single process over the same number of places
/// only by the grouping of the fp32 sum ((p0 + p1) + (p2 + p3) instead of
/// ((p0 + p1) + p2) + p3).
///
/// all_reduce: every process sends its local sum to every other (direct exchange; one
/// payload of the sum's size per peer), or, from 3 processes and ring_bytes on, around a
/// ring: reduce-scatter then all-gather, 2 (n - 1) / n of the sum's size per process, each
/// chunk summed in ring order (still the same on every process and every run).
/// reduce: the root's process sums what the others send; on the other processes the
/// lead's buffers hold the local partial sum afterwards. broadcast: the root's process
/// sends the root's values; the others receive them on their lead and spread them.
///
/// all_gather (SELECTED_ROWS gradients): every process first announces its lead's row counts
/// (with widths and heights) to every other, so that every process makes the same choice
/// (collective_call::exchange, core/sparse_exchange.hpp); a process whose own rows make the
/// gather look certain sends them along (expects_gather). Gathering, every process sends its
/// lead's rows and values (row_payload.hpp; a size of its own) to every other and
/// concatenates everyone's in process order, which is global rank order: every process holds
/// the same rows, those of one process over all the places. Densely, each process adds its
/// rows into a table with a touched-count column (dense_rows.hpp), the tables are
/// all-reduced as above, and every process takes the touched rows with their sums. A peer is
/// checked: a row count that disagrees with its values or with what it announced, a row
/// outside the table, or another width or height fails the collective naming that process.
///
/// A payload carries the collective's kind, root and size; a process whose stream failed,
/// or that finds a peer disagreeing, sends its failure to every peer: the collective fails
/// on every rank with an error naming that process, and nobody waits forever. A lost peer
/// breaks the transport's inbox, which fails every waiting collective.
class net_communicator final : public staged_communicator {
 public:
  /// All-reduces of at least this many bytes among 3 or more processes go around a ring.
  static constexpr std::size_t default_ring_bytes = 256 << 10;

  /// `channel` (>= 1) must be the same on every process for the same communicator: the
  /// processes create their communicators in the same order.
  net_communicator(net_transport& transport, std::uint32_t channel, int local_ranks,
                   std::size_t ring_bytes = default_ring_bytes);

  void abort() override;


 private:
  struct exchange;

  /// The network stage of `call`, enqueued on the lead's stream.
  void launch_exchange(const collective_call& call, std::vector<tensor*> buffers, stream& on) override;
  /// One poll of the network stage: true when finished. Throws when it failed, after
  /// telling every peer why.
  bool poll(exchange& x, bool stream_failed);
  /// The direct exchange: each payload straight to the processes that need it.
  bool direct(exchange& x);
  /// The receiving side of a direct all-reduce or reduce: sums packet by packet as they
  /// arrive, so that summing overlaps the transfer of the rest.
  bool sum_as_packets_arrive(exchange& x, std::size_t expected);
  /// The ring all-reduce: reduce-scatter then all-gather, one chunk per step to the right.
  bool ring(exchange& x);
  /// Sets up the ring's working copy of the buffers (the one buffer itself where possible).
  void start_ring(exchange& x);
  /// Packet `offset` of the payload `from` sent at wire `sequence`, once it arrived (nullopt
  /// before); throws unless it holds `bytes` bytes (the sender cut at other offsets).
  std::optional<byte_buffer> take_packet(std::uint64_t sequence, int from, std::size_t offset,
                                         std::size_t bytes);
  /// The all_gather of SELECTED_ROWS buffers: the row counts to and from every process
  /// (choose_exchange), then whole payloads of rows, or the dense all-reduce of the tables.
  bool gather(exchange& x);
  /// Sends this process's row counts, takes every peer's (checked) and chooses, the same on
  /// every process, whether the stage gathers rows or all-reduces tables: true once chosen.
  bool choose_exchange(exchange& x);
  /// Whether x's gather looks certain from this process's own rows (as if every process had
  /// as many): then its rows go with its counts, saving the round trip of announcing first
  /// when the choice is the gather (rows sent for nothing otherwise, at most a dense
  /// exchange's share; every process still chooses from the counts alone).
  bool expects_gather(const exchange& x) const;
  /// Takes what every peer (but those `skip` marks) sent for `step` of x's collective into
  /// `got` (by process rank) as far as it has arrived: true when everything is here; the
  /// missing go to x.awaiting.
  bool take_whole(exchange& x, std::uint64_t step, std::vector<std::optional<net_payload>>& got,
                  const std::vector<bool>* skip = nullptr);
  /// Sends `payload` as `step` of x's collective to every other process.
  void send_to_all(const exchange& x, std::uint64_t step, const byte_buffer& payload);
  /// Throws unless what `from` sent is the same collective with `expected` bytes (any
  /// number when nullopt: an all_gather's payloads differ by process).
  void check(const exchange& x, int from, const net_payload& got, std::optional<std::size_t> expected) const;
  net_packet header_of(const exchange& x, std::uint64_t step) const;

  net_transport& transport_;
  std::uint32_t channel_;
  std::size_t ring_bytes_;
  /// The processes whose data each network stage lacked at its last poll (a ring step
  /// waits for its left neighbour only), for the stall watch's thread.
  std::optional<std::vector<network_wait>> network_waits() const override;
  /// What a poll of `x` found missing (none: the stage finished or failed).
  void publish_awaited(const exchange& x, std::vector<int> processes);

  mutable std::mutex mutex_;
  std::optional<std::string> aborted_;            // guarded by mutex_
  std::map<std::uint64_t, network_wait> awaited_; // guarded by mutex_: by call sequence
};

} // namespace pe

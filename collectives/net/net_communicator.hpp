#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "collectives/communicator.hpp"
#include "collectives/cpu/inproc_communicator.hpp"
#include "collectives/net/net_transport.hpp"

namespace pe {

/// The communicator of CPU places spread over several processes: global rank = process
/// rank x local ranks + local index, as rank_model defines it.
///
/// Each collective runs in three stages on the places' communication streams: the local
/// places reduce in memory to one lead place (inproc_communicator, in local rank order);
/// the lead exchanges one payload per process over `transport` and sums the processes'
/// contributions in process order; the lead's result goes back to the local places
/// (in-memory broadcast). So one transfer per process and collective, and every process
/// computes the same sums in the same order: results are bit-identical on every process
/// and from run to run. They differ from a single process over the same number of places
/// only by the grouping of the fp32 sum ((p0 + p1) + (p2 + p3) instead of
/// ((p0 + p1) + p2) + p3).
///
/// all_reduce: every process sends its local sum to every other (direct exchange).
/// reduce: the root's process sums what the others send; on the other processes the
/// lead's buffers hold the local partial sum afterwards. broadcast: the root's process
/// sends the root's values; the others receive them on their lead and spread them.
///
/// A payload carries the collective's kind, root and size, and a process whose stream
/// failed sends its failure instead of data: a peer that disagrees or failed fails the
/// collective on every rank with an error naming that process. A lost peer breaks the
/// transport's inbox, which fails every waiting collective.
class net_communicator final : public communicator {
 public:
  /// `channel` (>= 1) must be the same on every process for the same communicator: the
  /// processes create their communicators in the same order.
  net_communicator(net_transport& transport, std::uint32_t channel, int local_ranks);

  int world_size() const override;
  void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers, stream& on,
              completion done = {}) override;
  void abort() override;

 private:
  struct exchange;

  /// The network stage of `call`, enqueued on the lead's stream.
  void launch_exchange(const collective_call& call, std::vector<tensor*> buffers, stream& on);
  /// One poll of the network stage: true when finished; throws when it failed.
  bool poll(exchange& x, bool stream_failed);
  /// The receiving half of poll: takes the peers' payloads and combines them.
  bool combine(exchange& x);
  net_packet header_of(const exchange& x) const;

  net_transport& transport_;
  std::uint32_t channel_;
  int local_ranks_;
  inproc_communicator local_;
  std::mutex mutex_;
  std::map<std::uint64_t, std::int64_t> started_; // by sequence: when stage 1 began
  std::optional<std::string> aborted_;            // guarded by mutex_
};

} // namespace pe

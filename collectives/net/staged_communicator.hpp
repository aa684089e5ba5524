#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/cpu/inproc_communicator.hpp"

namespace pe {

/// A communicator across processes that runs every collective in three stages on the
/// places' communication streams (global rank = process rank x local ranks + local index):
/// 1. the local places reduce in memory to one lead place (a barrier for a broadcast);
/// 2. the lead runs the network stage, which each backend implements (launch_exchange);
/// 3. the lead's result goes back to the local places (a barrier for a reduce).
/// The lead is the root's place when the root is in this process (reduce, broadcast), else
/// place 0. So one transfer per process and collective, whatever the backend. An all_gather
/// (SELECTED_ROWS) gathers the local places' rows on every place in stage 1, the lead gathers
/// the processes' in stage 2 (or all-reduces their tables densely, as the call's exchange and
/// every process's row count decide: the backend's choice, note_dense_fallback), and stage 3
/// broadcasts the lead's rows to the local places.
class staged_communicator : public communicator {
 public:
  int world_size() const final { return processes_ * local_ranks_; }

  /// Rank `local_rank`'s part of `call` (sequences 2s and 2s + 1 for the local stages);
  /// `done` gets the span from stage 1's start to stage 3's end.
  void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers, stream& on,
              completion done = {}) final;

  /// The collectives under way as a stall report shows them, by the callers' sequence: the
  /// local places that joined (stage 1), finished (stage 3), and the processes the network
  /// stage waits for where the backend tells (network_waits).
  std::optional<communicator_status> status() const final;

 protected:
  staged_communicator(int process_rank, int processes, int local_ranks);

  /// The network stage of `call`, enqueued on `on`, the lead's stream, over the lead's
  /// `buffers`; the call's root is a global rank.
  virtual void launch_exchange(const collective_call& call, std::vector<tensor*> buffers, stream& on) = 0;

  /// A network stage under way on this process and whose data it lacks.
  struct network_wait {
    std::uint64_t sequence = 0; ///< the callers' sequence number
    std::string label;
    std::vector<int> processes; ///< process ranks it waits for
    std::int64_t since_ns = 0;  ///< steady clock, when the stage began
  };
  /// The network stages waiting for other processes now; nullopt when the backend cannot
  /// tell (its transfer is opaque), so the report says only what the local stages show.
  virtual std::optional<std::vector<network_wait>> network_waits() const { return std::nullopt; }

  /// Throws pe::error naming the call when this backend's network stage cannot run it; called
  /// by launch before any stage is enqueued. Every kind runs by default.
  virtual void expect_runs(const collective_call& call) const { (void)call; }

  /// The network stage of collective `sequence` (the callers' numbering) ran an all_gather as
  /// a dense all-reduce: the collective's span says so (collective_span::dense_fallback).
  void note_dense_fallback(std::uint64_t sequence);

  /// Fails the local stages waiting for ranks and every later one: part of abort().
  void abort_local_stages() { local_.abort(); }

  int process_rank() const { return process_rank_; }
  int local_ranks() const { return local_ranks_; }

 private:
  int process_rank_;
  int processes_;
  int local_ranks_;
  inproc_communicator local_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::int64_t> started_; // by sequence: when stage 1 began
  std::set<std::uint64_t> dense_;                 // by sequence: note_dense_fallback's
};

} // namespace pe

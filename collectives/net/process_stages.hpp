#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/cpu/inproc_communicator.hpp"

namespace pe {

/// The three stages every cross-process backend runs a collective in, on the places'
/// communication streams (global rank = process rank x local ranks + local index):
/// 1. the local places reduce in memory to one lead place (a barrier for a broadcast);
/// 2. the lead runs the network stage (the backend's `exchange`, which enqueues it on the
///    lead's stream);
/// 3. the lead's result goes back to the local places (a barrier for a reduce).
/// The lead is the root's place when the root is in this process (reduce, broadcast), else
/// place 0. So one transfer per process and collective, whatever the backend.
class process_stages {
 public:
  process_stages(int process_rank, int local_ranks);

  /// Rank `local_rank`'s part of `call` (sequences 2s and 2s + 1 for the local stages);
  /// `exchange` is called for the lead alone, with the lead's buffers. `done` gets the
  /// span from stage 1's start to stage 3's end.
  void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers,
              stream& on, communicator::completion done,
              const std::function<void(std::vector<tensor*>)>& exchange);

  /// Fails the local stages waiting for ranks and every later one.
  void abort() { local_.abort(); }

 private:
  int process_rank_;
  int local_ranks_;
  inproc_communicator local_;
  std::mutex mutex_;
  std::map<std::uint64_t, std::int64_t> started_; // by sequence: when stage 1 began
};

} // namespace pe

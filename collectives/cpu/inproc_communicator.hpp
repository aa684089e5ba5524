#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"

namespace pe {

/// The communicator of the CPU places of one process: the ranks' parts meet in memory.
///
/// Each rank's part runs on its place's communication stream. When every rank has joined
/// (all inputs ready), rank r sums chunk r of the buffers in rank order (0 + 1 + ...) and
/// writes it where the collective puts results; when every rank has finished, each rank's
/// part returns. So N places reduce on N threads, and the result is bit-identical whatever
/// the schedule and the number of places' threads.
class inproc_communicator final : public communicator {
 public:
  explicit inproc_communicator(int ranks);

  int world_size() const override { return ranks_; }
  void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers,
              stream& on, completion done = {}) override;
  void abort() override;

  /// The sequence numbers each rank's parts ran with, in the order they ran: what the
  /// ordering tests read.
  std::vector<std::vector<std::uint64_t>> history() const;

 private:
  struct meeting {
    collective_call call;
    std::vector<std::vector<tensor*>> buffers; // [rank][variable]
    int joined = 0;
    int finished = 0;
    int left = 0;
    std::optional<std::string> failure;
    collective_span span;
    completion done;
  };

  void take_part(const collective_call& call, int rank, const std::vector<tensor*>& buffers,
                 bool stream_failed, const completion& done);
  /// Blocks until `ready` holds or the communicator breaks; the lock is held.
  template <class Pred>
  void wait(std::unique_lock<std::mutex>& lock, Pred ready);
  /// Checks the buffers of every rank once all have joined; the first problem, or none.
  static std::optional<std::string> check(meeting& m);
  static void compute(meeting& m, int rank, int ranks);

  int ranks_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint64_t, meeting> meetings_;
  std::vector<std::uint64_t> next_;                   // by rank: the sequence it expects
  std::vector<std::vector<std::uint64_t>> history_;   // by rank
  std::optional<std::string> broken_;                 // sticky: aborted or out of sequence
};

} // namespace pe

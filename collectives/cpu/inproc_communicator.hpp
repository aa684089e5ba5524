#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "core/spin_mutex.hpp"

namespace pe {

/// The communicator of the CPU places of one process: the ranks' parts meet in memory.
///
/// Each rank's part is polled work on its place's communication stream (stream::enqueue_polled): it
/// joins the meeting of its sequence number; once every rank has joined (all inputs
/// ready), rank r sums chunk r of the buffers in rank order (0 + 1 + ...) and writes it
/// where the collective puts results; once every rank has finished its chunk, each rank's
/// part is done. Waiting for the others holds only the communication stream: the place's
/// device thread runs its kernels meanwhile. N places reduce on N threads, and the result
/// is bit-identical whatever the schedule.
///
/// A rank whose thread is inside a long kernel would hold every collective up for that
/// kernel's length (its part joins only when its thread comes back to the stream; in
/// traces of the MLP on 2 places, a 5 KB all-reduce took 250 us, the other place's
/// mul_grad, and every later collective waited behind it). So a rank that joins also joins
/// for the ranks whose part was launched, is next in their sequence and whose inputs are
/// ready (collective_call::inputs_ready), and a meeting joined that way is computed whole
/// by the rank that completes it; the helped rank's part then finds it done. The sums are
/// the same (every element in rank order, whoever adds it). Not after any failure in this
/// communicator: a helped rank must not go on as if its stream were sound.
class inproc_communicator final : public communicator {
 public:
  explicit inproc_communicator(int ranks);

  int world_size() const override { return ranks_; }
  void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers,
              stream& on, completion done = {}) override;
  void abort() override;

  std::vector<std::vector<std::uint64_t>> history() const override;
  std::optional<communicator_status> status() const override;
  std::optional<int> ranks_on_this_host() const override { return ranks_; }

 private:
  struct meeting {
    collective_call call;
    std::vector<std::vector<tensor*>> buffers; // [rank][variable]
    int joined = 0;
    int first_rank = 0;            // the rank that joined first: what later ones must match
    std::vector<char> joined_by;   // [rank]
    std::vector<char> finished_by; // [rank]
    std::int64_t first_join_ns = 0;
    int finished = 0;
    int left = 0;
    std::optional<std::string> failure;
    collective_span span;
    completion done;
    /// all_gather: [rank][variable], what rank's buffers become. Each rank builds its own
    /// while the others may still read its inputs; the last rank to finish moves every
    /// rank's into its buffers, before the completion.
    std::vector<std::vector<tensor>> gathered;
    /// all_gather: the call's exchange chose the dense all-reduce (decided in check(), from
    /// every rank's row counts), so each rank's gathered rows are the touched rows, summed.
    bool dense = false;
    /// One rank computes every rank's part (it joined for another): the others only wait
    /// for it to finish.
    bool one_computes = false;
  };

  /// How far one rank's part of one collective has come.
  struct part {
    collective_call call;
    int rank = 0;
    std::vector<tensor*> buffers;
    completion done;
    bool joined = false;
    bool computed = false;
    bool sound = false; ///< joined from a stream that had not failed: may join for others
  };

  /// Joins, for the current meeting of `p`, every other rank that can be joined for
  /// (see the class comment). Call with mutex_ held, after `p` joined.
  void join_for_others(const part& p, std::unique_lock<spin_mutex>& lock);

  /// One poll of a rank's part: true when finished. Throws when the collective failed.
  bool poll(part& p, bool stream_failed);
  void join(part& p, bool stream_failed, std::unique_lock<spin_mutex>& lock);
  /// Checks the buffers of every rank once all have joined; the first problem, or none.
  static std::optional<std::string> check(meeting& m);
  /// Why rank p's call differs from what the first rank to join called (kind, root, label,
  /// number, dtype and size of the buffers), naming both; none when they agree.
  static std::optional<std::string> mismatch(const meeting& m, const part& p);
  static void compute(meeting& m, int rank, int ranks);

  int ranks_;
  // A spin_mutex: the places' device threads poll the meeting at every collective, and a
  // std::mutex put one of them to sleep whenever they met (core/spin_mutex.hpp).
  mutable spin_mutex mutex_;
  std::map<std::uint64_t, meeting> meetings_; // node-based: references stay valid
  std::vector<std::uint64_t> next_;                   // by rank: the sequence it expects
  std::vector<std::vector<std::uint64_t>> history_;   // by rank
  std::optional<std::string> broken_;                 // sticky: aborted or out of sequence
  /// Parts launched and not yet done, by (rank, sequence): what join_for_others looks up.
  std::map<std::pair<int, std::uint64_t>, std::shared_ptr<part>> launched_;
  bool failed_once_ = false; // a collective failed: no more joining for others
};

} // namespace pe

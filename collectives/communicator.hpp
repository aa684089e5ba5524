#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/sparse_exchange.hpp"
#include "core/tensor.hpp"
#include "devices/stream.hpp"

namespace pe {

/// One collective across every rank of a communicator. The same call, with the same
/// sequence number, is launched once per local rank.
struct collective_call {
  enum class kind {
    all_reduce, ///< every rank gets the element-wise sum
    reduce,     ///< `root` gets the sum; the others keep their values
    broadcast,  ///< every rank gets `root`'s values
    /// SELECTED_ROWS buffers (tensor::sparse_rows): every rank gets every rank's rows and
    /// values concatenated in rank order; the row counts may differ, the width and height
    /// may not
    all_gather,
  };

  kind what = kind::all_reduce;
  int root = 0;               ///< global rank (reduce, broadcast)
  std::uint64_t sequence = 0; ///< position in the order every rank issues collectives in
  std::string label;          ///< what errors name: "all_reduce(fc_0.w_0@GRAD)"
  /// Wanted for a trace: where a device runs the collective after the host issued it (a
  /// GPU), completion waits for the device and reports when the device ran it.
  bool timed = false;
  /// all_gather: gather the rows, all-reduce the table densely (dense_rows.hpp: every rank
  /// then gets each touched row once, with its sum, ascending), or choose per call from the
  /// ranks' row counts (core/sparse_exchange.hpp), the same on every rank.
  sparse_exchange exchange = sparse_exchange::automatic;
  /// Whether this rank's inputs are all written, without blocking (its writers' events
  /// done, none failed); empty where unknown. With it the in-process communicator lets
  /// another rank's thread complete the collective for this rank while this rank's thread
  /// is busy in a kernel (inproc_communicator). The caller vouches that nothing else queued
  /// before the collective on this rank's stream can fail it: the executor's CPU
  /// communication streams hold only collectives and the waits for their inputs, and a
  /// failed collective turns the joining-for off. Local to this process: never compared.
  std::function<bool()> inputs_ready{}; // {}: a call written without it draws no -Wextra warning
};

/// "all_reduce", "reduce", "broadcast": what errors call a kind.
std::string to_string(collective_call::kind kind);

/// Throws pe::error naming the call and `backend` when `call` is an all_gather (sparse
/// gradients), which only the in-process CPU backend runs so far: what the others' launch
/// says instead of moving rows they cannot.
void expect_no_all_gather(const collective_call& call, const std::string& backend);

/// Times of one completed collective, for tracing: when the last rank joined (no rank
/// wrote before) and when the last rank finished (every rank's result was complete). A
/// timed GPU collective ends when the first rank finished on its device (no rank read its
/// result before; the ranks' devices finish at slightly different times), never before
/// its start.
struct collective_span {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// An all_gather that ran as a dense all-reduce (collective_call::exchange): what a trace
  /// names it.
  bool dense_fallback = false;
};

/// A collective that some local rank has joined and that has not finished on every one:
/// what a stall report lists (who joined, who is missing).
struct collective_status {
  std::uint64_t sequence = 0;
  std::string label;
  std::vector<int> joined;          ///< local ranks that joined, ascending
  std::vector<int> finished;        ///< local ranks whose part is done, ascending
  std::int64_t first_join_ns = 0;   ///< steady clock, when the first rank joined
  /// Across processes: the process ranks whose data this process still lacks for it (its
  /// network stage is waiting for them); empty when none or when the backend cannot tell.
  std::vector<int> awaited_processes;
};

/// A communicator's state as a stall report shows it.
struct communicator_status {
  std::vector<collective_status> pending; ///< by sequence
  /// [local rank]: the sequence number the rank launches next (what it has reached).
  std::vector<std::uint64_t> next_sequence;
};

/// A group of ranks that run collectives together, behind one interface for every backend
/// (in-process CPU, NCCL, across processes).
///
/// launch() enqueues one local rank's part on that rank's communication stream and returns
/// at once; the caller records an event on the stream after it, and readers wait on that
/// event. Ranks must launch in the same sequence (0, 1, 2, ...): a rank whose launch
/// carries another sequence number than the one it expects fails that collective on every
/// rank with an error naming both, instead of hanging. A launch on a stream that already
/// failed still takes part and fails the collective on every rank, so one rank's failure
/// reaches all of them.
class communicator {
 public:
  /// Runs once per collective after every rank finished its part, on the thread of the
  /// last one: the span, and whether the collective succeeded.
  using completion = std::function<void(const collective_span&, bool ok)>;

  virtual ~communicator() = default;

  virtual int world_size() const = 0;

  /// Rank `local_rank`'s part of `call` over `buffers` (that rank's tensors, in the same
  /// order on every rank; read when the work runs, so earlier work on the stream may still
  /// write them) on `on`, a communication stream of the rank's place.
  virtual void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers,
                      stream& on, completion done = {}) = 0;

  /// Fails every collective waiting for ranks and every later launch: the executor is
  /// going away. Idempotent.
  virtual void abort() = 0;

  /// Why the communicator stopped working on its own (NCCL aborted after a lost peer or an
  /// error), or nullopt. For the backends whose aborted collectives end without an error on
  /// the stream (NCCL's kernels just quit): the executor checks it after a step, so a step
  /// whose collectives were cut short does not pass for done.
  virtual std::optional<std::string> failure() const { return std::nullopt; }

  /// The sequence numbers each local rank's parts ran with, in the order they ran, where
  /// the backend keeps them (the in-process one does; others return nothing): what the
  /// ordering tests read.
  virtual std::vector<std::vector<std::uint64_t>> history() const { return {}; }

  /// The collectives under way and where each local rank stands, for stall reports; may be
  /// called from any thread while collectives run. nullopt where the backend keeps no such
  /// state (the report then names the collective's stream work only).
  virtual std::optional<communicator_status> status() const { return std::nullopt; }

  /// How many of the ranks run on this host, their places sharing its cores; nullopt where
  /// the backend cannot tell (across hosts), and the caller counts its own places only.
  /// Where the ranks fill the cores, the executor gives the caller's side work to the
  /// places' idle threads (parallel_executor::run_meanwhile).
  virtual std::optional<int> ranks_on_this_host() const { return std::nullopt; }
};

} // namespace pe

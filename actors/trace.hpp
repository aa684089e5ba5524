#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/ssa_graph.hpp"

namespace pe {

/// One op firing as the tracer saw it. The span is the op's work on its stream (its
/// kernel; for a collective, from the moment every rank had joined to the moment every
/// rank had finished; on a GPU place the device's times, see stream::enqueue_timed), which
/// is what the hazard checker compares; `enqueued_ns` is when
/// the op actor, having received its last input message, put that work on the stream. The
/// host runs ahead, so enqueued_ns is usually well before start_ns.
struct trace_event {
  std::uint64_t step = 0;
  int op = 0;              ///< op handle id in the SSA graph
  int thread = 0;          ///< recording thread, numbered in order of first record
  std::int64_t enqueued_ns = 0; ///< steady clock, relative to the recorder's creation
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// When the stream's host thread ran the launch code (0 0 where not known, as for
  /// collectives): on a GPU place, a device span that begins right after launch_end_ns
  /// means the device waited for the host.
  std::int64_t launch_start_ns = 0;
  std::int64_t launch_end_ns = 0;
  /// A SELECTED_ROWS gradient's all_gather that ran as a dense all-reduce this step
  /// (collective_span::dense_fallback): the trace names it so.
  bool dense_fallback = false;
};

/// A moment worth marking on a trace's timeline: a stall report (made during a step, or
/// asked for with SIGUSR1), written as an instant event with the report in its args.
struct trace_instant {
  std::int64_t ns = 0;    ///< on the recorder's scale (trace_recorder::from_steady)
  std::uint64_t step = 0;
  std::string name;       ///< "stall report, step 3"
  std::string text;       ///< the report
};

/// What recorded events refer to: op ids index `graph.ops`; places are named as users see them.
struct trace_source {
  const ssa_graph& graph;
  const proto::ProgramDesc& main;
  std::vector<std::string> place_names;
  /// In a job of several processes: this one's rank, their number, and this process's
  /// steady clock minus rank 0's (estimated when they met), for merging their traces.
  int process_rank = 0;
  int num_processes = 1;
  std::int64_t clock_offset_ns = 0;
  /// The steady-clock time the events' times count from (trace_recorder::origin_ns()).
  std::int64_t origin_ns = 0;
  /// Instant events to mark (stall reports), on the "steps" track.
  std::vector<trace_instant> instants = {};
};

/// Records op firings of selected steps. Each thread appends to a buffer of its own, so the
/// hot path takes no lock (only a thread's first record registers its buffer). Read the
/// events only while no step runs.
class trace_recorder {
 public:
  static constexpr std::uint64_t all_steps = std::numeric_limits<std::uint64_t>::max();

  /// Records steps first..last (inclusive, counted from 1 per executor, or on from the step
  /// it resumed at: parallel_executor::set_steps_done).
  explicit trace_recorder(std::uint64_t first_step = 1, std::uint64_t last_step = all_steps);
  ~trace_recorder();
  trace_recorder(const trace_recorder&) = delete;
  trace_recorder& operator=(const trace_recorder&) = delete;

  bool wants(std::uint64_t step) const { return step >= first_ && step <= last_; }

  /// Nanoseconds since this recorder was created (steady clock).
  std::int64_t now_ns() const;

  /// A steady-clock time (ns since the clock's epoch) on this recorder's scale.
  std::int64_t from_steady(std::int64_t steady_ns) const { return steady_ns - origin_ns_; }

  /// The steady-clock time (ns since the clock's epoch) events count from.
  std::int64_t origin_ns() const { return origin_ns_; }

  void record(std::uint64_t step, int op, std::int64_t enqueued_ns, std::int64_t start_ns,
              std::int64_t end_ns, bool dense_fallback = false);
  /// record() of a task whose launch code ran on a stream's host thread from
  /// `launch_start_ns` to `launch_end_ns` (the recorder's scale).
  void record_launched(std::uint64_t step, int op, std::int64_t enqueued_ns, std::int64_t start_ns,
                       std::int64_t end_ns, std::int64_t launch_start_ns, std::int64_t launch_end_ns);

  /// Every event recorded so far, ordered by start time.
  std::vector<trace_event> events() const;

 private:
  struct thread_buffer;

  thread_buffer& local_buffer();

  std::uint64_t id_; // tells this recorder's thread-local cache entries from another's
  std::uint64_t first_, last_;
  std::int64_t origin_ns_;
  mutable std::mutex registry_mutex_;
  std::vector<std::unique_ptr<thread_buffer>> buffers_;
};

} // namespace pe

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pe {

class communicator;
class device;
class step_graph;

/// Who waits for whom in a step that made no progress (or in a running step, when asked
/// for one): what the stall watch prints and what the step's error names.
struct stall_report {
  std::uint64_t step = 0;
  double idle_s = 0;      ///< seconds without progress when it was made
  double step_s = 0;      ///< seconds since the step started
  bool on_demand = false; ///< asked for (SIGUSR1), not a stall
  std::int64_t made_ns = 0; ///< steady clock, when it was made (a trace's instant event)
  /// From a stuck op back to the root cause, one link each ("all_reduce #12
  /// (fc_0.w_0@GRAD) on cpu:1 waits for cpu:0", ...); the last link is the root cause.
  std::vector<std::string> chain;
  std::string root_cause; ///< chain.back(), or why there is no chain
  std::string text;       ///< the whole report, one finding per line, ending in a newline
};

/// What a report reads, as the executor holds it during a step. Everything it reads of the
/// running step is atomic (node_live, stream counts) or locked (the communicator's
/// status), so it may be made while the step runs, from the thread that waits for it.
struct stall_view {
  const step_graph* graph = nullptr;
  std::vector<device*> devices;           ///< by place
  std::vector<std::string> place_names;   ///< by place
  const communicator* comm = nullptr;     ///< may be null
  std::uint64_t step = 0;                 ///< the step being watched
  std::uint64_t sequence_base = 0;        ///< its first collective's sequence number
  std::int64_t step_start_ns = 0;         ///< steady clock
  std::int64_t now_ns = 0;                ///< steady clock
  double idle_s = 0;
  bool on_demand = false;
  std::optional<std::string> first_error; ///< the step's first error so far
  int process_rank = 0;
  int num_processes = 1;
};

/// The report: every op handle not finished this step with its state (not fired, with the
/// input versions it misses and their producers; queued on its stream behind N items;
/// running since when; failed), each collective under way with the local ranks that
/// joined and those missing (and the sequence each has reached), each stream's queue, and
/// one causal chain from the last unfinished op back to its root cause.
stall_report make_stall_report(const stall_view& view);

/// The report of a wait after the step's ops all finished, in a host exchange the step's
/// graph does not show (the gather of every process's fetched values): the same heading as
/// make_stall_report (only step, times and process are read of `view`), a one-link chain
/// `root_cause`, and what the process does.
stall_report make_after_step_report(const stall_view& view, const std::string& doing, std::string root_cause);

} // namespace pe

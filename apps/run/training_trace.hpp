#pragma once

#include <cstdint>
#include <fstream>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/trace.hpp"
#include "apps/run/engine.hpp"
#include "apps/run/options.hpp"
#include "apps/run/stall_log.hpp"

namespace pe {

/// What --trace and --check-hazards reported after training.
struct trace_report {
  /// The metrics file's entries: "trace" {file, events} and "hazards" {steps, violations},
  /// each present when its flag was given.
  nlohmann::json metrics = nlohmann::json::object();
  std::size_t violations = 0;
};

/// The file --trace writes in this process: the path itself, or with --nnodes one file
/// per process, "t.rank1.json" for "t.json" on rank 1 (pe-actor-trace merge joins them).
std::string trace_file_of(const run_options& options);

/// The recording of a run's training steps for --trace and --check-hazards. Created before
/// the first training step, it attaches its recorder to the engine's training executor for
/// the steps --trace-steps selects and detaches it when destroyed, so the recorder outlives
/// every step it records, also when training throws.
class training_trace {
 public:
  /// Checks that --trace-steps starts within the run's `steps` and opens the --trace file,
  /// so that neither fails only after training. Throws pe::error.
  training_trace(const run_options& options, engine& executor, std::int64_t steps);
  ~training_trace();
  training_trace(const training_trace&) = delete;
  training_trace& operator=(const training_trace&) = delete;

  /// After training: writes the --trace file and runs --check-hazards, printing its
  /// verdict and every violation to `out`.
  /// `stalls` (may be null): the run's stall reports, written as instant events.
  trace_report finish(std::ostream& out, const stall_log* stalls = nullptr);

 private:
  const run_options& options_;
  engine& executor_;
  trace_recorder recorder_;
  std::string path_;   // trace_file_of(options_)
  std::ofstream file_; // open iff --trace
};

} // namespace pe

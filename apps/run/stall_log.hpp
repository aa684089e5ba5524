#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/stall_report.hpp"
#include "actors/trace.hpp"

namespace pe {

/// Where pe-actor-run's stall reports go (--stall-timeout, SIGUSR1): each is printed to
/// `err` (stderr) as it comes, kept for the metrics file ("stall_reports") and for the
/// trace (instant events). Reports come from the thread that runs a step; the log locks.
class stall_log {
 public:
  explicit stall_log(std::ostream& err) : err_(err) {}

  /// What execution_strategy::on_report calls.
  std::function<void(const stall_report&)> sink();

  /// Prints and keeps `report`.
  void add(const stall_report& report);

  /// The reports so far, as the metrics file lists them: step, on_demand, idle_s, step_s,
  /// root_cause, chain.
  nlohmann::json to_json() const;

  /// The reports so far as a trace's instant events (times on `recorder`'s scale), those of
  /// steps `recorder` records only.
  std::vector<trace_instant> instants(const trace_recorder& recorder) const;

  bool empty() const;

 private:
  std::ostream& err_;
  mutable std::mutex mutex_;
  std::vector<stall_report> reports_;
};

} // namespace pe

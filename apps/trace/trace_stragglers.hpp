#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace pe {

/// How late one process came to the collectives of a job: its arrival (the start of its
/// span of a collective) minus the earliest process's, over every collective all processes
/// traced.
struct straggler_rank {
  int rank = 0;
  double median_us = 0;
  double p95_us = 0;
  double max_us = 0;
  std::size_t last = 0; ///< collectives it came to last (ties: the higher rank)
};

/// One collective where a process came late.
struct straggler_arrival {
  std::uint64_t step = 0;
  std::int64_t collective = 0; ///< its position among the step's collectives
  std::string label;           ///< "all_reduce(fc_0.w_0@GRAD)"
  int rank = 0;                ///< the latest process
  int first_rank = 0;          ///< the earliest
  double late_us = 0;          ///< rank's arrival after first_rank's
};

struct straggler_report {
  int processes = 0;
  std::size_t collectives = 0;             ///< collectives every process traced
  std::vector<straggler_rank> ranks;       ///< by rank
  std::vector<straggler_arrival> latest;   ///< the `top` latest arrivals, latest first
};

/// The stragglers of the trace `doc` (a parsed Chrome trace): a merged one (pe-actor-trace
/// merge: one "pid" per process, all times on rank 0's clock) compares the processes; one
/// process's trace has nothing to compare and gives processes = 1. Throws pe::error for a
/// document that is not a pe-actor trace.
straggler_report find_stragglers(const nlohmann::json& doc, std::size_t top = 5);

/// The report as pe-actor-trace stragglers prints it: a line per rank, then the latest
/// arrivals with the collective, its step and the process that was first.
void print_stragglers(const straggler_report& report, std::ostream& out);

} // namespace pe

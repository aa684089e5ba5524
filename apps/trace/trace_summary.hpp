#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>

#include "apps/trace/trace_file.hpp"

namespace pe {

/// What `pe-actor-trace summarize` prints per step.
struct summary_options {
  /// The step to detail; none: every step when there are at most 3, else the first and the
  /// slowest.
  std::optional<std::uint64_t> step;
  /// Idle gaps longer than this are listed; none: longer than 5% of the step.
  std::optional<double> gap_us;
};

/// Prints the trace's overview: time per op type (total, count, mean; longest total first),
/// each track's busy share of the traced steps' wall time, and for the detailed steps the
/// critical path (span by span, with the wait for each span's last message) and the idle
/// gaps of every place and of the collectives.
void print_summary(const trace_file& trace, const summary_options& options, std::ostream& out);

} // namespace pe

#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/trace/trace_file.hpp"

namespace pe {

/// Time spent in one op type over every traced step.
struct op_type_time {
  std::string name;
  double total_us = 0;
  std::size_t count = 0;

  double mean_us() const { return total_us / static_cast<double>(count); }
};

/// Per op type, by total time, longest first.
std::vector<op_type_time> op_type_times(const trace_file& trace);

/// Busy time of one track (a lane of a place, or of the collectives).
struct track_busy {
  std::size_t track = 0;
  double busy_us = 0;
};

/// Every track holding spans, in display order (trace_file::track_sort_index).
std::vector<track_busy> track_busy_times(const trace_file& trace);

/// The sum of the traced steps' durations: the wall time utilisation is measured against.
double traced_wall_us(const trace_file& trace);

/// The chain of spans that decided when `step` ended, first span first: it ends with the
/// span that ends last, and before each span comes whichever ended last of the senders of
/// its messages and the span before it on its own track (its stream: a kernel starts only
/// after the one enqueued before it). The chain starts at a span with neither.
std::vector<std::size_t> critical_path(const trace_file& trace, std::uint64_t step);

/// A time within a step when no lane of a track group (a place's lanes, or the collectives)
/// runs a span.
struct idle_gap {
  std::string group;                ///< "cpu:1", "collectives"
  double start_us = 0;
  double end_us = 0;
  std::optional<std::size_t> after;  ///< the span that ended when the gap began
  std::optional<std::size_t> before; ///< the span that started when it ended

  double duration_us() const { return end_us - start_us; }
};

/// The group a track belongs to: "cpu:0 (2)" -> "cpu:0" (trace_format::track_group).
std::string track_group(const std::string& track);

/// Idle gaps of `step` longer than `min_us`, per group in display order, from the step's
/// start to its end (a group with no span in the step is idle throughout).
std::vector<idle_gap> idle_gaps(const trace_file& trace, std::uint64_t step, double min_us);

} // namespace pe

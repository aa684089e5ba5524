#pragma once

#include <chrono>
#include <functional>
#include <iosfwd>

#include "actors/stall_report.hpp"

namespace pe {

class process_group;

/// Makes rank 0's stall report the job's. Wraps `sink` (where this process's reports go) so
/// that, in a job of several processes, every other rank also sends each stall report (not
/// SIGUSR1's, which every process is sent itself) to rank 0, and rank 0, after its own
/// report, waits up to `wait` for the other ranks' and prints them to `err` under one
/// heading: one line per rank with its root cause, naming the ranks that sent none in time
/// (not stalled, stopped, stuck outside a step, or lost), then their whole reports. Without
/// a group (one process) `sink` is returned as it is. `group` must outlive the result.
std::function<void(const stall_report&)> gather_stall_reports(std::function<void(const stall_report&)> sink,
                                                              process_group* group, std::chrono::milliseconds wait,
                                                              std::ostream& err);

} // namespace pe

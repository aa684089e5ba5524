#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace pe {

/// Cross-process arrows grow with the square of the processes; above this many they are left
/// out (and the merged file says so).
constexpr std::size_t max_processes_with_network_arrows = 8;

/// What merge_traces wrote.
struct merge_report {
  std::size_t events = 0;         ///< trace events written, metadata included
  std::size_t network_arrows = 0; ///< cross-process arrows drawn
  bool network_arrows_left_out = false; ///< more than max_processes_with_network_arrows
  std::size_t skew_spans = 0;     ///< collectives whose arrival skew was drawn
};

/// Merges the traces the processes of one job wrote (pe-actor-run --nnodes N --trace
/// t.json writes t.rankR.json on rank R) into one Chrome trace written to `out`:
/// - a process ("pid" R + 1, named "rank R", sorted by rank) per input, holding its tracks;
/// - every time on rank 0's steady clock (origin_ns + ts - clock_offset_ns of its file),
///   counted from the earliest input's origin, which otherData.origin_ns gives;
/// - each file's message arrows, re-numbered, and per collective (same step and "collective"
///   arg on every process) one "network" arrow per ordered pair of processes p -> q, from
///   p's span start to q's span end: each process sends its part to every other one;
/// - a process "collective skew" (pid = processes + 1, after the ranks) with, per collective
///   every process traced, a span (cat "skew") from the earliest arrival to the latest,
///   named "rank R X ms late", its args the step, collective, label, first_rank,
///   latest_rank and late_us: the timeline shows the skew.
/// otherData: "tool", "origin_ns", "merged" [{file, rank, clock_offset_ns, origin_ns,
/// places}], "clocks" (how offsets were estimated), "network_arrows" and "skew".
/// Throws pe::error naming the file for fewer than 2 inputs, unreadable files, files that
/// are no per-process pe-actor trace, two files of one rank, files of different jobs
/// (process counts differ) and a rank missing.
merge_report merge_traces(const std::vector<std::string>& paths, std::ostream& out);

/// Whether the trace at `path` is one that merge_traces wrote (false when it cannot be read).
bool is_merged_trace(const std::string& path);

} // namespace pe

#pragma once

// The pe-actor trace file format, defined once for its writer (write_chrome_trace,
// actors/trace_export.cpp) and its readers (pe-actor-trace, apps/trace/). Header-only and
// free of JSON and of the engine's types: pe_trace_tool reads traces without linking the
// actors library, so it includes this file and links nothing new.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

/// A pe-actor trace is a Chrome Trace Event file (JSON object format: Perfetto and
/// chrome://tracing load it) with the engine's own fields:
///
///   { "traceEvents": [...], "displayTimeUnit": "ns",
///     "otherData": { "tool": "pe-actor", "places": ["cpu:0", ...], "tracks": [...],
///                    "process": { "rank", "processes", "clock_offset_ns", "origin_ns" } } }
///
/// Events, all with "pid" 1:
/// - "ph": "X" spans: one per op firing on its track ("tid"), named by op type, "cat"
///   "computation", "collective" or "engine", "args" {step, op (graph id), label
///   ("op #3 (mul) on cpu:1"), inputs and outputs ("x@2"), thread, enqueued_us}, where the
///   stream's host thread ran the launch code apart from the span (a GPU place) also
///   launched_us (when it began) and launch_us (how long it took) and, for a collective, "collective": its position among the step's collectives, the same on every
///   process of a job; one span per step ("cat" "step", "args" {step}) on the "steps" track;
/// - "ph": "s" / "f" flow arrows ("cat" "message", "bp" "e" on the end), one per message:
///   from the sender's span end to the receiver's span start, paired by "id";
/// - "ph": "i" instant events ("s" "p", "cat" "stall") on the "steps" track: a stall report
///   made during the run (a stall, or SIGUSR1), "args" {step, report (its text)};
/// - "ph": "M" metadata: "process_name", and per track "thread_name" and "thread_sort_index".
/// Tracks ("tid" indexes otherData.tracks): one per place, "collectives", "steps"; where spans
/// of one track overlap, extra lanes "cpu:0 (2)" take them. Times ("ts", "dur",
/// "enqueued_us") are microseconds (doubles) from the recorder's nanosecond clock, counted
/// from process.origin_ns.
///
/// pe-actor-trace merge writes the same shape for a job: one "pid" per rank (rank + 1),
/// "network" arrows between the processes' collectives, and otherData {tool, origin_ns,
/// merged [{file, rank, clock_offset_ns, origin_ns, places}], clocks, network_arrows}.
namespace pe::trace_format {

/// otherData.tool of every pe-actor trace (also its process's name in a viewer).
inline constexpr const char* tool_name = "pe-actor";
/// displayTimeUnit.
inline constexpr const char* display_unit = "ns";
/// The "pid" of a single process's events; merged traces number rank R as first_pid + R.
inline constexpr int first_pid = 1;

/// Member names, of the document, otherData, events and their args.
namespace key {
// The document.
inline constexpr const char* trace_events = "traceEvents";
inline constexpr const char* display_time_unit = "displayTimeUnit";
inline constexpr const char* other_data = "otherData";
// otherData (of a process's trace; merged ones also use origin_ns and places).
inline constexpr const char* tool = "tool";
inline constexpr const char* places = "places";
inline constexpr const char* tracks = "tracks";
inline constexpr const char* process = "process";
inline constexpr const char* rank = "rank";
inline constexpr const char* processes = "processes";
inline constexpr const char* clock_offset_ns = "clock_offset_ns";
inline constexpr const char* origin_ns = "origin_ns";
// otherData of a merged trace.
inline constexpr const char* merged = "merged";
inline constexpr const char* file = "file";
inline constexpr const char* clocks = "clocks";
inline constexpr const char* network_arrows = "network_arrows";
inline constexpr const char* skew = "skew"; ///< merged: what the "collective skew" process shows
// An event.
inline constexpr const char* ph = "ph";
inline constexpr const char* pid = "pid";
inline constexpr const char* tid = "tid";
inline constexpr const char* ts = "ts";
inline constexpr const char* dur = "dur";
inline constexpr const char* name = "name"; ///< also a metadata event's args.name
inline constexpr const char* cat = "cat";
inline constexpr const char* args = "args";
inline constexpr const char* id = "id";   ///< a flow arrow's, pairing its "s" and "f"
inline constexpr const char* bp = "bp";   ///< a flow end's binding point
inline constexpr const char* scope = "s";  ///< an instant event's scope
// A span's args.
inline constexpr const char* step = "step";
inline constexpr const char* op = "op";
inline constexpr const char* label = "label";
inline constexpr const char* inputs = "inputs";
inline constexpr const char* outputs = "outputs";
inline constexpr const char* thread = "thread";
inline constexpr const char* enqueued_us = "enqueued_us";
inline constexpr const char* launched_us = "launched_us";
inline constexpr const char* launch_us = "launch_us";
inline constexpr const char* collective = "collective";
// A skew span's args (merged traces): the first and the latest process at a collective.
inline constexpr const char* first_rank = "first_rank";
inline constexpr const char* latest_rank = "latest_rank";
inline constexpr const char* late_us = "late_us";
// An instant event's args (a stall report).
inline constexpr const char* report = "report";
// A sort-index metadata event's args.
inline constexpr const char* sort_index = "sort_index";
} // namespace key

/// Values of "ph".
namespace phase {
inline constexpr const char* span = "X";
inline constexpr const char* metadata = "M";
inline constexpr const char* flow_start = "s";
inline constexpr const char* flow_end = "f";
/// An instant event (a stall report), drawn across its process ("s": "p").
inline constexpr const char* instant = "i";
inline constexpr const char* process_scope = "p";
/// "bp" of a flow end: it binds to the span that encloses it.
inline constexpr const char* enclosing = "e";
} // namespace phase

/// Values of "cat".
namespace category {
inline constexpr const char* computation = "computation";
inline constexpr const char* collective = "collective";
inline constexpr const char* engine = "engine";
inline constexpr const char* step = "step";
inline constexpr const char* message = "message"; ///< an arrow within a process; also its name
inline constexpr const char* network = "network"; ///< an arrow between processes (merged)
inline constexpr const char* stall = "stall";     ///< a stall report's instant event
inline constexpr const char* skew = "skew";       ///< a collective's arrival skew (merged)
} // namespace category

/// "name" of the metadata events.
namespace metadata {
inline constexpr const char* process_name = "process_name";
inline constexpr const char* process_sort_index = "process_sort_index";
inline constexpr const char* thread_name = "thread_name";
inline constexpr const char* thread_sort_index = "thread_sort_index";
} // namespace metadata

/// The track of the collectives' spans and the one of the step spans.
inline constexpr const char* collectives_track = "collectives";
inline constexpr const char* steps_track = "steps";

/// The name of lane `lane` (from 0) of a track group: the group itself ("cpu:0") for lane 0,
/// "cpu:0 (2)" for lane 1 and so on.
inline std::string track_name(const std::string& group, std::size_t lane) {
  return lane == 0 ? group : group + " (" + std::to_string(lane + 1) + ")";
}

/// The group of a track, undoing track_name: "cpu:0 (2)" -> "cpu:0".
inline std::string track_group(const std::string& track) {
  const auto lane = track.rfind(" (");
  return lane != std::string::npos && track.ends_with(')') ? track.substr(0, lane) : track;
}

/// A clock's nanoseconds as the file's microseconds.
inline double to_us(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

/// The file's microseconds back as nanoseconds (rounded: the file holds whole ns).
inline std::int64_t to_ns(double us) {
  return static_cast<std::int64_t>(std::llround(us * 1000.0));
}

/// How far apart two of the file's times of one instant may be: a span's ts + dur and its
/// arrow's ts differ by rounding only, well under 1 ns.
inline constexpr double same_time_us = 1e-3;

} // namespace pe::trace_format

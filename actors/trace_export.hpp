#pragma once

#include <iosfwd>
#include <vector>

#include "actors/trace.hpp"

namespace pe {

/// Writes recorded firings as a Chrome Trace Event file (JSON object format), which
/// Perfetto and chrome://tracing load:
/// - one track per place ("cpu:0") and one for the collectives; where firings on one track
///   overlap in time (independent ops on two workers), extra lanes "cpu:0 (2)" take them;
/// - a span ("ph": "X") per firing, named by op type, with args step, op (graph id), label
///   ("op #3 (mul) on cpu:1"), inputs and outputs ("x@2"; dummies left out), thread;
/// - a flow arrow ("ph": "s" / "f", "cat": "message") for every message: from the sender's
///   span end to the receiver's span start, within a step;
/// - a "steps" track with one span per step ("step 3").
/// A collective's span also has arg "collective": its position among the step's
/// collectives, the same on every process of a job. "otherData" carries "places",
/// "tracks" and "process" {rank, processes, clock_offset_ns, origin_ns} for tools (pe-actor-trace
/// merge). Times are microseconds.
void write_chrome_trace(std::ostream& out, const trace_source& source,
                        const std::vector<trace_event>& events);

} // namespace pe

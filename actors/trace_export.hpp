#pragma once

#include <iosfwd>
#include <vector>

#include "actors/trace.hpp"

namespace pe {

/// Writes recorded firings as a pe-actor trace: a Chrome Trace Event file (JSON object
/// format) that Perfetto and chrome://tracing load and pe-actor-trace reads. The format (its
/// fields, tracks and time units) is defined in actors/trace_format.hpp. Here: one track per
/// place and one for the collectives, extra lanes where firings on one track overlap in time
/// (independent ops on two workers); a span per firing, labelled "op #3 (mul) on cpu:1", its
/// inputs and outputs named "x@2" (dummies left out; a collective's with their place); a
/// flow arrow per message within a step; one span per step on the "steps" track.
void write_chrome_trace(std::ostream& out, const trace_source& source,
                        const std::vector<trace_event>& events);

} // namespace pe

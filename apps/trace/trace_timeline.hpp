#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "apps/trace/trace_file.hpp"

namespace pe {

/// What `pe-actor-trace timeline` draws.
struct timeline_options {
  std::uint64_t step = 0;  ///< the traced step to draw
  bool messages = true;    ///< draw every message as a thin line from sender to receiver
  std::string title;       ///< the heading's first words, e.g. the trace's file name
};

/// Writes one step of `trace` as a standalone SVG: a lane per track holding spans of the
/// step and per place (display order) labelled with its name, a span per firing coloured by op kind (lighter for backward ops) with a
/// tooltip of its label and duration, idle time as the lane's background, a time axis from
/// the step's start, and a legend of the kinds present. Throws pe::error for a step that
/// the trace lacks.
void write_timeline_svg(const trace_file& trace, const timeline_options& options,
                        std::ostream& out);

} // namespace pe

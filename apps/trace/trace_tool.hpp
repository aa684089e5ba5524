#pragma once

#include <iosfwd>

namespace pe {

/// pe-actor-trace: reads a trace that pe-actor-run --trace wrote and runs the subcommand
/// argv[1] names ("summarize" prints it to `out`, "timeline" draws an SVG, "merge" joins the
/// traces of a job's processes into one). Prints help to `out` for --help. Returns the exit status (0); throws pe::error for bad arguments and
/// unreadable or foreign traces.
int run_trace_tool(int argc, const char* const* argv, std::ostream& out);

} // namespace pe

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/trace.hpp"

namespace pe {

/// One way a recorded step broke the graph's promises.
struct hazard_violation {
  std::uint64_t step = 0;
  std::string message; ///< names both ops, the variable (name@version on a place) and the step
};

/// Checks recorded firings against the SSA graph, for every step present in `events`. Times
/// are stream times: each event's span is its work on its stream (a kernel from its start
/// to its end; a collective from the moment every rank joined to the moment every rank
/// finished), so a reader whose kernel started before its writer's kernel ended is a
/// violation even though the writer's actor had long messaged it:
/// - every op fired exactly once;
/// - every read of name@v on a place happened after the write of v finished (read after
///   write) and finished before the write of v+1 started (write after read);
/// - the write of v+1 started after the write of v finished (write after write).
/// Ops that both read v and write v+1 (in-place updates) are not compared with themselves.
std::vector<hazard_violation> check_hazards(const trace_source& source,
                                            const std::vector<trace_event>& events);

} // namespace pe

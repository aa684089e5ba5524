#pragma once

#include <cstdint>
#include <random>

#include "graph/proto.hpp"

namespace pe::fuzz {

/// Structure-aware mutation of a ProgramDesc: edits what a byte-level mutator rarely turns
/// into a valid but hostile program. One call applies one edit, chosen by `rng`:
/// - a dim of a variable set to an interesting value (0, -1, -2, 2^31, 2^32, 2^62, int64's
///   extremes, ...), a dim added or removed, the dtype or variable type changed;
/// - an attribute's value (int, float, long, string, bool and their lists) set to an
///   interesting value, an attribute dropped or retyped, op_role_var pointed at other vars;
/// - an op's type replaced by another registered op type (or a grad type), an op dropped,
///   duplicated or moved;
/// - a slot renamed or dropped, an argument replaced by another variable's name, added or
///   removed; persistable flags flipped.
/// Returns false when the program had nothing the chosen edit applies to.
bool mutate_program(proto::ProgramDesc& program, std::minstd_rand& rng);

} // namespace pe::fuzz

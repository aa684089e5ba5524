#pragma once

// Ops that run a sub-block (conditional_block): which block they run, and which variables
// they read and write as the rest of the program sees them. An op handle of the SSA graph
// stands for the whole sub-block (see README "Control flow"), so the graph, the hazard
// edges, the feeds and the memory release all ask here rather than at the op's own slots.

#include <string>
#include <vector>

#include "graph/proto.hpp"

namespace pe {

/// The index of the block `op` runs (its BLOCK attribute `sub_block`), or -1 when it has none.
int sub_block_of(const proto::OpDesc& op);

/// sub_block_of(op), checked against `program`: the block exists, is not block 0 or
/// `block` itself, and names `block` as its parent. Throws pe::error saying which.
int checked_sub_block(const proto::ProgramDesc& program, int block, const proto::OpDesc& op);

/// The variables an op reads and writes.
struct var_accesses {
  std::vector<std::string> reads;
  std::vector<std::string> writes;
};

/// `op`'s own slots as bound (a variable bound twice is listed twice: an input edge each),
/// then, once each and not repeating those, for an op with a sub-block every variable the sub-block's ops
/// (nested sub-blocks included) read before an op of that sub-block has written it, and
/// every variable they write (the sub-block's own temporaries too, so that they are
/// released after the op like any other output). An op of `program`'s block `block`.
var_accesses accesses_of(const proto::ProgramDesc& program, int block, const proto::OpDesc& op);

} // namespace pe

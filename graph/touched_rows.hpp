#pragma once
// Reduce mode's update of a sparse table (build_strategy::reduce_mode::reduce, a SELECTED_ROWS
// gradient): the table's owner place runs its optimizer op alone and then broadcasts only the
// rows the step touched, when the optimizer changes no other row (sgd; adam with lazy_mode).
// A rewrite of block 0, after each such optimizer op of parameter W and gradient G:
//   sparse_rows_pack(Param = W, Grad = G) -> Out = T        T = W's distinct rows of G, ascending
//   c_broadcast(X = T) -> Out = T                           from the place that owns W
//   sparse_rows_scatter(Param = W, Grad = G, Rows = T) -> ParamOut = W
// Every place knows the touched rows: the gradient's all_gather gives every place every
// place's rows, in both modes. So the broadcast is a dense one of k x width values (k the
// distinct rows), which every backend runs, across processes too, instead of the whole table.
// The SSA graph takes c_broadcast's root from the owner of the parameter its `param`
// attribute names, runs the optimizer op on the owner only, and leaves W out of the
// broadcasts of whole parameters at the end of the step. Optimizers that also change
// untouched rows (momentum, adam without lazy_mode, adamw's decay) keep the whole broadcast.

#include "graph/proto.hpp"

namespace pe {

/// Block 0 of `program` with the three ops above after every optimizer op whose Grad is
/// declared SELECTED_ROWS and which updates only the rows it holds. The packed rows are
/// declared in block 0 as "<W>@TOUCHED_ROWS" (FP32 [-1, width]). A program without such an
/// op comes back unchanged.
proto::ProgramDesc broadcast_touched_rows(const proto::ProgramDesc& program);

} // namespace pe

#pragma once
// Batch statistics across every place and process (Paddle's BuildStrategy.sync_batch_norm and
// its `sync_batch_norm` op), as a rewrite of block 0 into ops the actor graph already knows
// how to run: two local reductions, a collective between them, and the normalisation.
//
// Why a rewrite and not a kernel: in the actor model a collective is an op handle of its own
// (a communicator call every place launches in one sequence), never a call hidden inside a
// compute kernel, which would block a place's stream on the others' and could deadlock
// against the launch order of the gradients' collectives. Split this way, the statistics
// travel through the same all-reduce as the gradients, in graph order, over places and
// processes alike; a world of one place runs the all-reduce as a copy.
//
// A training-mode sync_batch_norm (is_test and use_global_stats false) becomes
//   sync_batch_norm_stats(X, Mean) -> S            S = [sum(x - K), sum((x - K)^2), count]
//   c_allreduce_sum(S) -> S                         per channel, K the running mean Mean
//   sync_batch_norm_apply(X, Scale, Bias, Mean, Variance, S)
//       -> Y, MeanOut, VarianceOut, SavedMean, SavedVariance
// and its grad
//   sync_batch_norm_grad_stats(X, Y@GRAD, SavedMean, SavedVariance)
//       -> Scale@GRAD, Bias@GRAD, G                G = [sum dy, sum dy * xhat, count]
//   c_allreduce_sum(G) -> G
//   sync_batch_norm_grad_apply(X, Scale, SavedMean, SavedVariance, Y@GRAD, G) -> X@GRAD
// Scale@GRAD and Bias@GRAD stay this place's sums: they are parameter gradients, which the
// gradient collectives sum over places as they sum every other. Shifting by the running mean
// (the same on every place: every place updates it with the same global statistics) keeps
// sum((x - K)^2) / n - (sum(x - K) / n)^2 from cancelling once the running mean has
// followed the data. The counts are FP32: exact up to 2^24 elements per channel and place.
// An op in inference mode stays (or becomes) a plain batch_norm.

#include "graph/proto.hpp"

namespace pe {

/// Block 0 of `program` with every training-mode sync_batch_norm and sync_batch_norm_grad
/// rewritten as above; with `convert_batch_norm` (BuildStrategy.sync_batch_norm), every
/// training-mode batch_norm and batch_norm_grad first becomes its sync_ counterpart. The
/// statistics variables are declared in block 0 ("<Y>@SYNC_BN_STATS", "<Y@GRAD>@SYNC_BN_STATS").
/// Throws pe::error for a sync_batch_norm whose Scale is not a declared variable of known
/// [C] dims. A program without such ops comes back unchanged.
proto::ProgramDesc lower_sync_batch_norm(const proto::ProgramDesc& program, bool convert_batch_norm);

/// Whether block 0 of `program` holds an op of `type`.
bool has_op_type(const proto::ProgramDesc& program, const char* type);

} // namespace pe

#pragma once
// What batch_norm's schemas (norm_ops.cpp) share with those of the ops a synchronised
// batch_norm is lowered into (sync_batch_norm_ops.cpp). Internal to graph/ops.
#include <cstdint>
#include <vector>

#include "graph/op_registry.hpp"

namespace pe {

/// batch_norm's attributes with Paddle's defaults.
std::vector<attr_spec> batch_norm_attrs();

/// batch_norm's input slots (X, Scale, Bias, Mean, Variance, MomentumTensor) and output
/// slots (Y, MeanOut, VarianceOut, SavedMean, SavedVariance, ReserveSpace).
std::vector<slot_spec> batch_norm_inputs();
std::vector<slot_spec> batch_norm_outputs();

/// X's dims, checked to be FP32 [N, C, ...] of rank 2 to 5 in NCHW (fuse_with_relu refused).
const shape_t& batch_norm_input(const shape_context& ctx);

/// Fails unless each slot's dims are FP32 [c].
void expect_channel_dims(const shape_context& ctx, const std::vector<const char*>& slots, std::int64_t c);

} // namespace pe

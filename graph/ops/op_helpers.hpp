#pragma once

// What the op schema files (graph/ops/*.cpp) share: the FP32 check of shape inference and
// the registration of an op together with the grad op its default grad maker emits.
// Internal to graph/ops.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_registry.hpp"

namespace pe {

/// The dims of input `slot`[i], which must be FP32.
const shape_t& fp32_dims(const shape_context& ctx, const std::string& slot, std::size_t i = 0);

/// Shape inference giving each output the dims of an input: {{"X", "Out"}} for relu,
/// {{"X", "X@GRAD"}} for a grad op. The inputs must be FP32.
shape_fn dims_from(std::vector<std::pair<std::string, std::string>> input_to_output);

/// Registers `forward` with Paddle's default grad maker for `grad`, and the schema of the
/// "<type>_grad" op it emits: the inputs `grad` lists, the forward's attributes, and an
/// output "<I>@GRAD" per input slot I. Those outputs are dispensable: an input whose
/// gradient nobody needs is left unbound and not computed.
void add_with_grad(op_registry& r, op_schema forward, const default_grad& grad,
                   shape_fn infer_grad);

/// A unary op X -> Out whose grad op reads Out and Out@GRAD but not X, as Paddle's
/// relu/tanh/sigmoid and softmax/log_softmax grads do; X@GRAD gets Out's dims.
void add_with_out_grad(op_registry& r, const std::string& type, std::vector<attr_spec> attrs,
                       shape_fn infer_shape);

} // namespace pe

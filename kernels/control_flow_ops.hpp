#pragma once
// The control-flow ops on every kind of place: conditional_block (runs its sub-block when
// Cond holds), select_input (Out = X[Mask]) and increment (Out = X + step, the step counter
// of learning-rate schedules). Shared here is how each reads and checks its inputs, so the
// CPU kernels (kernels/cpu/control_flow_kernels.cpp) and the CUDA kernels
// (kernels/cuda/control_flow_kernels.cu) decide alike; a place brings how it reads one
// element back to the host (a CUDA kernel waits for its stream).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// Why a Cond of `type` and `dims` cannot be a scalar condition ("" when it can): one BOOL
/// element (dims -1 where unknown at shape inference pass).
std::string scalar_condition_problem(dtype type, const shape_t& dims);

/// What a place's control-flow kernels bring.
struct control_flow_moves {
  /// Reads an input (checked as the place checks one: initialised, on the place).
  input_fn input;
  /// The one element of a BOOL / INT32 tensor on the place, read to the host (a GPU place
  /// waits for its stream: Paddle's conditional_block copies Cond to the CPU likewise).
  bool (*read_bool)(const kernel_context& ctx, const tensor& t);
  std::int32_t (*read_int32)(const kernel_context& ctx, const tensor& t);
  /// Output `slot` = a copy of `in` (any dtype), with in's dims.
  void (*copy_to)(kernel_context& ctx, const tensor& in, std::string_view slot);
  /// Out = X + step in X's dtype, after X was checked to be one FP32, INT64 or INT32 element;
  /// in place over X is fine.
  void (*increment)(kernel_context& ctx, const tensor& x, float step);
};

/// Registers for places of kind `kind`:
/// - conditional_block: runs its sub-block (kernel_context::run_sub_block) when Cond holds:
///   with is_scalar_condition, the one Cond tensor is a single true BOOL element (anything
///   else fails naming it); without, as Paddle, when every Cond tensor has elements. An
///   untaken branch writes nothing.
/// - select_input: Out = X[Mask]; Mask one INT32 element indexing X, that X holding a value
///   (the others may be outputs of a branch that did not run).
/// - increment: Out = X + step, X one FP32, INT64 or INT32 element.
void register_control_flow_ops(kernel_registry& r, place::kind kind, const control_flow_moves& m);

} // namespace pe

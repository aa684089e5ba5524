#include "graph/exec/bound_op.hpp"

#include "graph/exec/scope.hpp"
#include "graph/op_registry.hpp"

namespace pe {

namespace {

const op_schema& schema_of(const proto::OpDesc& op, int index) {
  const op_schema* s = op_registry::global().find(op.type());
  if (s == nullptr)
    throw error("op #" + std::to_string(index) + ": unknown op type '" + op.type() + "'");
  if (s->host_op)
    throw error("op #" + std::to_string(index) + " (" + op.type() +
                ") is performed by the executor and has no kernel");
  return *s;
}

kernel_context::slot_map bind(const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& slots,
                              scope& vars) {
  kernel_context::slot_map out;
  for (const auto& slot : slots) {
    auto& tensors = out[slot.parameter()];
    for (const auto& name : slot.arguments()) tensors.push_back(&vars.var(name));
  }
  return out;
}

kernel_context make_context(const proto::OpDesc& op, scope& vars, place where, int index) {
  const op_schema& schema = schema_of(op, index);
  try {
    return kernel_context(op.type(), bind(op.inputs(), vars), bind(op.outputs(), vars),
                          resolve_attributes(op, schema), where);
  } catch (const error& e) {
    throw error("op #" + std::to_string(index) + " (" + op.type() + "): " + e.what());
  }
}

/// Throws pe::error naming the first of `outputs` that is FP32 and holds NaN or an infinity.
void check_finite(const finite_check_fn& check, const kernel_context& ctx,
                  const std::vector<std::pair<std::string, const tensor*>>& outputs) {
  for (const auto& [name, t] : outputs) {
    if (!t->initialized() || t->type() != dtype::fp32) continue;
    if (const auto bad = check(ctx, *t))
      throw error("output variable '" + name + "' " + to_string(t->shape()) + " holds " +
                  std::to_string(bad->value) + " at element " + std::to_string(bad->index) +
                  " (--check-nan-inf)");
  }
}

} // namespace

bound_op::bound_op(const proto::OpDesc& op, scope& vars, place where, int op_index,
                   bool check_nan_inf, std::optional<place::kind> kernels)
    : context_(make_context(op, vars, where, op_index)),
      kernel_(kernel_registry::global().find(op.type(), kernels.value_or(where.type))),
      index_(op_index) {
  if (kernel_ == nullptr)
    throw error("op #" + std::to_string(op_index) + " (" + op.type() + "): no kernel for " +
                to_string(where));
  if (check_nan_inf &&
      (finite_check_ = kernel_registry::global().find_finite_check(kernels.value_or(where.type))) == nullptr)
    throw error("--check-nan-inf: " + to_string(where) + " has no finite check");
  for (const auto& slot : op.inputs())
    for (const auto& name : slot.arguments()) inputs_.emplace_back(name, vars.find(name));
  if (check_nan_inf)
    for (const auto& slot : op.outputs())
      for (const auto& name : slot.arguments())
        checked_outputs_.emplace_back(name, vars.find(name));
}

void bound_op::run() {
  for (const auto& [name, t] : inputs_)
    if (!t->initialized())
      throw error("op #" + std::to_string(index_) + " (" + type() + ") on " +
                  to_string(context_.where()) + ": input variable '" + name +
                  "' has no value (not fed, not initialised by the startup program, "
                  "and not written by an earlier op)");
  try {
    (*kernel_)(context_);
    if (finite_check_ != nullptr) check_finite(*finite_check_, context_, checked_outputs_);
  } catch (const std::exception& e) {
    throw error("op #" + std::to_string(index_) + " (" + type() + ") on " +
                to_string(context_.where()) + ": " + e.what());
  }
}

} // namespace pe

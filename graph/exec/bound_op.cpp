#include "graph/exec/bound_op.hpp"

#include "graph/exec/scope.hpp"
#include "graph/op_registry.hpp"
#include "graph/sub_blocks.hpp"

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
    : bound_op(op, nullptr, 0, vars, where, op_index, check_nan_inf, kernels) {}

bound_op::bound_op(const proto::ProgramDesc& program, int block, int op_index, scope& vars,
                   place where, bool check_nan_inf, std::optional<place::kind> kernels)
    : bound_op(program.blocks(block).ops(op_index), &program, block, vars, where, op_index,
               check_nan_inf, kernels) {}

bound_op::bound_op(const proto::OpDesc& op, const proto::ProgramDesc* program, int block,
                   scope& vars, place where, int op_index, bool check_nan_inf,
                   std::optional<place::kind> kernels)
    : context_(make_context(op, vars, where, op_index)),
      kernel_(kernel_registry::global().find(op.type(), kernels.value_or(where.type))),
      index_(op_index),
      block_(block) {
  if (kernel_ == nullptr) throw error(label() + ": no kernel for " + to_string(where));
  if (check_nan_inf &&
      (finite_check_ = kernel_registry::global().find_finite_check(kernels.value_or(where.type))) == nullptr)
    throw error("--check-nan-inf: " + to_string(where) + " has no finite check");
  const op_schema& schema = schema_of(op, op_index);
  for (const auto& slot : op.inputs()) {
    const slot_spec* spec = schema.find_input(slot.parameter());
    if (spec != nullptr && spec->unwritten_ok) continue; // the kernel checks what it reads
    for (const auto& name : slot.arguments()) inputs_.emplace_back(name, vars.find(name));
  }
  if (check_nan_inf)
    for (const auto& slot : op.outputs())
      for (const auto& name : slot.arguments())
        checked_outputs_.emplace_back(name, vars.find(name));
  if (!schema.runs_sub_block && sub_block_of(op) < 0) return;
  if (program == nullptr)
    throw error(label() + " runs a sub-block: bind it with its program");
  int sub = 0;
  try {
    sub = checked_sub_block(*program, block, op);
  } catch (const error& e) {
    throw error(label() + ": " + e.what());
  }
  sub_ops_ = std::make_shared<std::vector<bound_op>>();
  const proto::BlockDesc& body = program->blocks(sub);
  sub_ops_->reserve(static_cast<std::size_t>(body.ops_size()));
  for (int i = 0; i < body.ops_size(); ++i)
    sub_ops_->push_back(bound_op(body.ops(i), program, sub, vars, where, i, check_nan_inf, kernels));
  context_.set_sub_block([ops = sub_ops_] {
    for (bound_op& inner : *ops) inner.run();
  });
}

std::string bound_op::label() const {
  return (block_ > 0 ? "block " + std::to_string(block_) + " " : std::string()) + "op #" +
         std::to_string(index_) + " (" + type() + ")";
}

void bound_op::bind(device* d, stream* s) {
  context_.bind(d, s);
  if (sub_ops_)
    for (bound_op& inner : *sub_ops_) inner.bind(d, s);
}

void bound_op::set_steps_before(std::uint64_t steps) {
  context_.set_calls(steps);
  if (sub_ops_)
    for (bound_op& inner : *sub_ops_) inner.set_steps_before(steps);
}

void bound_op::run() {
  for (const auto& [name, t] : inputs_)
    if (!t->initialized())
      throw error(label() + " on " + to_string(context_.where()) + ": input variable '" + name +
                  "' has no value (not fed, not initialised by the startup program, "
                  "and not written by an earlier op)");
  try {
    (*kernel_)(context_);
    if (finite_check_ != nullptr) check_finite(*finite_check_, context_, checked_outputs_);
  } catch (const std::exception& e) {
    throw error(label() + " on " + to_string(context_.where()) + ": " + e.what());
  }
}

} // namespace pe

#include "tests/support/op_test.hpp"

#include <gtest/gtest.h>

#include "graph/exec/bound_op.hpp"
#include "graph/attributes.hpp"

namespace pe::testing {

proto::OpDesc make_op(const std::string& type, const slot_vars& inputs, const slot_vars& outputs,
                      const attr_list& attrs) {
  proto::OpDesc op;
  op.set_type(type);
  for (const auto& [slot, var] : inputs) set_input(op, slot, {var});
  for (const auto& [slot, var] : outputs) set_output(op, slot, {var});
  for (const auto& [name, value] : attrs) set_attr(op, name, value);
  return op;
}

void run_op(const proto::OpDesc& op, scope& vars) {
  bound_op(op, vars, place::cpu(), 0).run();
}

std::string error_of(const proto::OpDesc& op, scope& vars) {
  try {
    run_op(op, vars);
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

std::map<std::string, var_info> infer(const proto::OpDesc& op, const var_table& vars) {
  const op_schema* schema = op_registry::global().find(op.type());
  if (schema == nullptr) throw error("unknown op type '" + op.type() + "'");
  attribute_map attrs = resolve_attributes(op, *schema);
  shape_context ctx(op, attrs, vars, 0);
  schema->infer_shape(ctx);
  return {ctx.inferred().begin(), ctx.inferred().end()};
}

} // namespace pe::testing

#include "tests/support/op_test.hpp"

#include <span>

#include <gtest/gtest.h>

#include <cmath>

#include "graph/exec/bound_op.hpp"
#include "graph/attributes.hpp"

namespace pe::testing {

tensor values(std::vector<float> v, shape_t dims) {
  return tensor::from_vector(v, std::move(dims));
}

tensor iota(shape_t dims) {
  std::vector<float> v(static_cast<std::size_t>(numel_of(dims)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return values(std::move(v), std::move(dims));
}

namespace {

::testing::AssertionResult elements_near(const tensor& t, const shape_t& dims,
                                         std::span<const float> expected, float tolerance) {
  if (t.shape() != dims)
    return ::testing::AssertionFailure()
           << "dims " << to_string(t.shape()) << ", expected " << to_string(dims);
  auto got = t.values<float>();
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (std::abs(got[i] - expected[i]) > tolerance * (1.f + std::abs(expected[i])))
      return ::testing::AssertionFailure()
             << "element " << i << " is " << got[i] << ", expected " << expected[i];
  return ::testing::AssertionSuccess();
}

} // namespace

::testing::AssertionResult tensor_is(const tensor& t, const shape_t& dims,
                                     const std::vector<float>& expected) {
  return elements_near(t, dims, expected, 1e-5f);
}

::testing::AssertionResult tensor_is(const tensor& t, const tensor& expected, float tolerance) {
  return elements_near(t, expected.shape(), expected.values<float>(), tolerance);
}

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
  return error_of([&] { run_op(op, vars); });
}

std::map<std::string, var_info> infer(const proto::OpDesc& op, const var_table& vars) {
  const op_schema* schema = op_registry::global().find(op.type());
  if (schema == nullptr) throw error("unknown op type '" + op.type() + "'");
  attribute_map attrs = resolve_attributes(op, *schema);
  shape_context ctx(op, attrs, vars, 0);
  schema->infer_shape(ctx);
  return {ctx.inferred().begin(), ctx.inferred().end()};
}

std::string infer_error(const proto::OpDesc& op, const var_table& vars) {
  return error_of([&] { infer(op, vars); });
}

} // namespace pe::testing

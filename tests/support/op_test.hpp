#pragma once

#include <cstdint>
#include <map>

#include <gtest/gtest.h>
#include <string>
#include <utility>
#include <vector>

#include "graph/exec/scope.hpp"
#include "core/attribute.hpp"
#include "graph/op_registry.hpp"
#include "graph/proto.hpp"
#include "tests/support/expect_error.hpp"

namespace pe::testing {

/// (slot, variable) bindings and (name, value) attributes of a hand-built op.
using slot_vars = std::vector<std::pair<std::string, std::string>>;
using attr_list = std::vector<std::pair<std::string, attribute>>;
/// The value of an int-list attribute (strides, paddings, axes, shape).
using ints = std::vector<std::int32_t>;

/// An OpDesc binding one variable per listed slot.
proto::OpDesc make_op(const std::string& type, const slot_vars& inputs,
                      const slot_vars& outputs, const attr_list& attrs = {});

/// Binds `op` to `vars` on cpu:0 and runs its kernel; throws what the kernel throws.
void run_op(const proto::OpDesc& op, scope& vars);

/// The message of the pe::error that binding or running `op` throws ("" when it succeeds).
std::string error_of(const proto::OpDesc& op, scope& vars);

/// An FP32 tensor of `dims` holding `v`.
tensor values(std::vector<float> v, shape_t dims);

/// 0, 1, 2, ... as FP32 in a tensor of `dims`.
tensor iota(shape_t dims);

/// The elements of `t` (element type T) as a vector of R: for EXPECT_EQ and indexing.
template <class T, class R = T>
std::vector<R> elements_of(const tensor& t) {
  auto v = t.values<T>();
  return {v.begin(), v.end()};
}

/// `t` has `dims` and each element within 1e-5 relative of `expected`.
::testing::AssertionResult tensor_is(const tensor& t, const shape_t& dims,
                                     const std::vector<float>& expected);

/// FP32 `t` has `expected`'s dims and each element within `tolerance` relative of its own.
::testing::AssertionResult tensor_is(const tensor& t, const tensor& expected,
                                     float tolerance = 1e-5f);

/// The outputs shape inference gives `op` over the declared `vars`, by name.
std::map<std::string, var_info> infer(const proto::OpDesc& op, const var_table& vars = {});

/// The message of the pe::error shape inference throws for `op` ("" when it succeeds).
std::string infer_error(const proto::OpDesc& op, const var_table& vars = {});

/// A binary elementwise op `type` over X = "x", Y = "y" into Out = "out".
inline pe::proto::OpDesc binary_op(const std::string& type, const attr_list& attrs = {}) {
  return make_op(type, {{"X", "x"}, {"Y", "y"}}, {{"Out", "out"}}, attrs);
}

} // namespace pe::testing

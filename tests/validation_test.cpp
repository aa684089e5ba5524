// Validation on load: each error names the op, slot and variable involved.
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "graph/attributes.hpp"
#include "graph/models/mlp.hpp"
#include "graph/validate.hpp"
#include "tests/support/tiny_mlp.hpp"

namespace {

using namespace pe;
using pe::testing::tiny_mlp;

/// The first op of `type` in block 0.
proto::OpDesc& op_of(proto::ProgramDesc& p, const std::string& type) {
  for (auto& op : *p.mutable_blocks(0)->mutable_ops())
    if (op.type() == type) return op;
  throw std::runtime_error("no op " + type);
}

proto::VarDesc& var_of(proto::ProgramDesc& p, const std::string& name) {
  for (auto& v : *p.mutable_blocks(0)->mutable_vars())
    if (v.name() == name) return v;
  throw std::runtime_error("no var " + name);
}

/// The tensor description (dtype, dims) of variable `name` in block 0.
proto::VarType::TensorDesc& tensor_of(proto::ProgramDesc& p, const std::string& name) {
  return *var_of(p, name).mutable_type()->mutable_lod_tensor()->mutable_tensor();
}

/// Asserts that validation fails with a message containing every fragment.
void expect_invalid(const proto::ProgramDesc& p, std::initializer_list<std::string> fragments) {
  try {
    validate_program(p);
    ADD_FAILURE() << "validation passed";
  } catch (const error& e) {
    std::string m = e.what();
    for (const auto& f : fragments) EXPECT_NE(m.find(f), std::string::npos) << "'" << f << "' not in: " << m;
  }
}

/// Asserts that tiny_mlp's main program, changed by `edit`, fails validation with a message
/// containing every fragment.
void expect_invalid_after(const std::function<void(proto::ProgramDesc&)>& edit,
                          std::initializer_list<std::string> fragments) {
  auto m = tiny_mlp();
  edit(m.main);
  expect_invalid(m.main, fragments);
}

TEST(validation, built_programs_are_valid) {
  auto m = tiny_mlp();
  EXPECT_NO_THROW(validate_program(m.main));
  EXPECT_NO_THROW(validate_program(m.startup));
}

TEST(validation, unknown_op_type) {
  expect_invalid_after([](auto& p) { op_of(p, "relu").set_type("gelu_fancy"); },
                       {"op #2", "unknown op type 'gelu_fancy'"});
}

TEST(validation, missing_required_slot) {
  expect_invalid_after([](auto& p) { op_of(p, "mul").mutable_inputs()->RemoveLast(); }, // Y
                       {"op #0 (mul)", "missing required input slot 'Y'"});
}

TEST(validation, unknown_slot) {
  expect_invalid_after([](auto& p) { set_input(op_of(p, "relu"), "Bias", {"image"}); },
                       {"op #2 (relu)", "unknown input slot 'Bias'"});
}

TEST(validation, too_many_variables_in_a_slot) {
  expect_invalid_after([](auto& p) { set_input(op_of(p, "relu"), "X", {"fc_0.tmp_1", "image"}); },
                       {"op #2 (relu)", "input slot 'X' takes one variable but has 2"});
}

TEST(validation, undeclared_variable) {
  expect_invalid_after([](auto& p) { set_input(op_of(p, "mul"), "X", {"pixels"}); },
                       {"op #0 (mul)", "input X uses variable 'pixels', which is not declared"});
}

TEST(validation, missing_required_attribute) {
  // momentum's mu has no default.
  mlp_config c;
  c.input_width = 4;
  c.hidden = {};
  c.classes = 2;
  c.optimizer = "momentum";
  auto mm = build_mlp(c);
  auto& op = op_of(mm.main, "momentum");
  auto* attrs = op.mutable_attrs();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == "mu") attrs->DeleteSubrange(i, 1);
  expect_invalid(mm.main, {"(momentum)", "missing required attribute 'mu'"});
}

TEST(validation, attribute_of_the_wrong_type) {
  expect_invalid_after([](auto& p) { set_attr(op_of(p, "mul"), "x_num_col_dims", std::string("one")); },
                       {"op #0 (mul)", "attribute 'x_num_col_dims' has type STRING, expected INT"});
}

TEST(validation, shape_mismatch_found_by_shape_inference) {
  // The first weight is declared [6, 5]; pretend the image is 7 wide.
  expect_invalid_after([](auto& p) { tensor_of(p, "image").mutable_dims()->Set(1, 7); },
                       {"op #0 (mul)"});
}

TEST(validation, declared_output_shape_disagrees) {
  expect_invalid_after([](auto& p) { tensor_of(p, "fc_0.tmp_2").mutable_dims()->Set(1, 9); },
                       {"op #2 (relu)", "shape mismatch", "'fc_0.tmp_2'", "[-1, 5]", "[-1, 9]"});
}

TEST(validation, unsupported_dtype) {
  expect_invalid_after([](auto& p) { tensor_of(p, "image").set_data_type(proto::VarType::FP16); },
                       {"variable 'image'", "dtype FP16", "not supported"});
}

TEST(validation, unsupported_variable_kind) {
  expect_invalid_after(
      [](auto& p) { var_of(p, "image").mutable_type()->set_type(proto::VarType::LOD_TENSOR_ARRAY); },
      {"variable 'image'", "LOD_TENSOR_ARRAY", "does not support"});
  // SELECTED_ROWS is supported as FP32 rows of a [height, width] table only (a sparse
  // gradient; tests/paddle_sparse_training_test.cpp has the rest).
  expect_invalid_after(
      [](auto& p) { var_of(p, "image").mutable_type()->set_type(proto::VarType::SELECTED_ROWS); },
      {"variable 'image' is SELECTED_ROWS of BOOL []", "only FP32 rows of a [height, width] table"});
}

TEST(validation, duplicate_declaration_and_sub_blocks) {
  expect_invalid_after([](auto& p) { *p.mutable_blocks(0)->add_vars() = var_of(p, "image"); },
                       {"variable 'image' is declared twice"});
  // A sub-block is validated with the op that runs it (tests/control_flow_test.cpp has the
  // cases); an op that runs none is refused naming the attribute.
  expect_invalid_after(
      [](auto& p) {
        proto::OpDesc& cond = *p.mutable_blocks(0)->add_ops();
        cond.set_type("conditional_block");
        set_input(cond, "Cond", {"image"});
      },
      {"(conditional_block): has no BLOCK attribute 'sub_block'"});
}

} // namespace

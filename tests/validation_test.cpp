// Validation on load: each error names the op, slot and variable involved.
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

TEST(validation, built_programs_are_valid) {
  auto m = tiny_mlp();
  EXPECT_NO_THROW(validate_program(m.main));
  EXPECT_NO_THROW(validate_program(m.startup));
}

TEST(validation, unknown_op_type) {
  auto m = tiny_mlp();
  op_of(m.main, "relu").set_type("gelu_fancy");
  expect_invalid(m.main, {"op #2", "unknown op type 'gelu_fancy'"});
}

TEST(validation, missing_required_slot) {
  auto m = tiny_mlp();
  auto& mul = op_of(m.main, "mul");
  mul.mutable_inputs()->RemoveLast(); // Y
  expect_invalid(m.main, {"op #0 (mul)", "missing required input slot 'Y'"});
}

TEST(validation, unknown_slot) {
  auto m = tiny_mlp();
  set_input(op_of(m.main, "relu"), "Bias", {"image"});
  expect_invalid(m.main, {"op #2 (relu)", "unknown input slot 'Bias'"});
}

TEST(validation, too_many_variables_in_a_slot) {
  auto m = tiny_mlp();
  set_input(op_of(m.main, "relu"), "X", {"fc_0.tmp_1", "image"});
  expect_invalid(m.main, {"op #2 (relu)", "input slot 'X' takes one variable but has 2"});
}

TEST(validation, undeclared_variable) {
  auto m = tiny_mlp();
  set_input(op_of(m.main, "mul"), "X", {"pixels"});
  expect_invalid(m.main, {"op #0 (mul)", "input X uses variable 'pixels', which is not declared"});
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
  auto m = tiny_mlp();
  set_attr(op_of(m.main, "mul"), "x_num_col_dims", std::string("one"));
  expect_invalid(m.main, {"op #0 (mul)", "attribute 'x_num_col_dims' has type STRING, expected INT"});
}

TEST(validation, shape_mismatch_found_by_shape_inference) {
  auto m = tiny_mlp();
  // The first weight is declared [6, 5]; pretend the image is 7 wide.
  auto* dims = var_of(m.main, "image").mutable_type()->mutable_lod_tensor()->mutable_tensor()->mutable_dims();
  dims->Set(1, 7);
  expect_invalid(m.main, {"op #0 (mul)"});
}

TEST(validation, declared_output_shape_disagrees) {
  auto m = tiny_mlp();
  auto* dims = var_of(m.main, "fc_0.tmp_2").mutable_type()->mutable_lod_tensor()->mutable_tensor()->mutable_dims();
  dims->Set(1, 9);
  expect_invalid(m.main, {"op #2 (relu)", "shape mismatch", "'fc_0.tmp_2'", "[-1, 5]", "[-1, 9]"});
}

TEST(validation, unsupported_dtype) {
  auto m = tiny_mlp();
  var_of(m.main, "image").mutable_type()->mutable_lod_tensor()->mutable_tensor()->set_data_type(
      proto::VarType::FP16);
  expect_invalid(m.main, {"variable 'image'", "dtype FP16", "not supported"});
}

TEST(validation, unsupported_variable_kind) {
  auto m = tiny_mlp();
  var_of(m.main, "image").mutable_type()->set_type(proto::VarType::SELECTED_ROWS);
  expect_invalid(m.main, {"variable 'image'", "SELECTED_ROWS"});
}

TEST(validation, duplicate_declaration_and_sub_blocks) {
  auto m = tiny_mlp();
  *m.main.mutable_blocks(0)->add_vars() = var_of(m.main, "image");
  expect_invalid(m.main, {"variable 'image' is declared twice"});
  auto n = tiny_mlp();
  n.main.add_blocks()->set_idx(1);
  expect_invalid(n.main, {"2 blocks", "not supported"});
}

} // namespace

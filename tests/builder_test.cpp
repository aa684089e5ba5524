// The program builder and append_backward: program structure like Paddle's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "graph/attributes.hpp"
#include "graph/backward.hpp"
#include "graph/builder.hpp"
#include "graph/models/mlp.hpp"
#include "graph/op_role.hpp"
#include "graph/program_info.hpp"
#include "graph/program_io.hpp"
#include "graph/validate.hpp"

namespace {

using namespace pe;

std::vector<std::string> op_types(const proto::ProgramDesc& p) {
  std::vector<std::string> out;
  for (const auto& op : p.blocks(0).ops()) out.push_back(op.type());
  return out;
}

const proto::VarDesc* var(const proto::ProgramDesc& p, const std::string& name) {
  for (const auto& v : p.blocks(0).vars())
    if (v.name() == name) return &v;
  return nullptr;
}

TEST(builder, mlp_has_paddle_structure) {
  mlp_config c;
  c.input_width = 20;
  c.hidden = {16};
  c.classes = 3;
  auto m = build_mlp(c);
  std::vector<std::string> expected = {
      // forward
      "mul", "elementwise_add", "relu", "mul", "elementwise_add",
      "softmax_with_cross_entropy", "mean", "top_k", "accuracy",
      // backward, reverse order, seeded by fill_constant(loss@GRAD)
      "fill_constant", "mean_grad", "softmax_with_cross_entropy_grad", "elementwise_add_grad",
      "mul_grad", "relu_grad", "elementwise_add_grad", "mul_grad",
      // optimizer
      "sgd", "sgd", "sgd", "sgd"};
  EXPECT_EQ(op_types(m.main), expected);

  const auto& ops = m.main.blocks(0).ops();
  EXPECT_EQ(role_of(ops[9]), op_role::backward | op_role::loss);
  EXPECT_EQ(output_args(ops[9], "Out"), std::vector<std::string>{m.loss + "@GRAD"});
  for (int i = 10; i < 17; ++i) EXPECT_EQ(role_of(ops[i]), op_role::backward) << i;
  for (int i = 17; i < 21; ++i) EXPECT_EQ(role_of(ops[i]), op_role::optimize) << i;

  // The grad op of the first layer's weight carries op_role_var [param, grad].
  const auto* role_var = find_attr(ops[16], "op_role_var");
  ASSERT_NE(role_var, nullptr);
  EXPECT_EQ(role_var->strings(0), "fc_0.w_0");
  EXPECT_EQ(role_var->strings(1), "fc_0.w_0@GRAD");
  // The input's gradient is not computed: data vars stop gradients.
  EXPECT_TRUE(output_args(ops[16], "X@GRAD").empty());

  // Parameters: declared persistable in both programs, initialised by the startup program.
  for (const char* p : {"fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"}) {
    ASSERT_NE(var(m.main, p), nullptr) << p;
    EXPECT_TRUE(var(m.main, p)->persistable()) << p;
    EXPECT_TRUE(var(m.main, p)->is_parameter()) << p;
    ASSERT_NE(var(m.startup, p), nullptr) << p;
  }
  EXPECT_EQ(op_types(m.startup),
            (std::vector<std::string>{"uniform_random", "fill_constant", "uniform_random",
                                      "fill_constant", "fill_constant"}));
  // Xavier limit of a 20x16 weight: sqrt(6 / 36).
  EXPECT_NEAR(find_attr(m.startup.blocks(0).ops(0), "max")->f(), std::sqrt(6.0 / 36.0), 1e-6);

  // Shapes come from shape inference.
  auto vars = validate_program(m.main);
  EXPECT_EQ(vars.at("fc_0.tmp_0").dims, (shape_t{-1, 16}));
  EXPECT_EQ(vars.at("fc_1.tmp_1").dims, (shape_t{-1, 3}));
  EXPECT_EQ(vars.at("fc_0.w_0@GRAD").dims, (shape_t{20, 16}));
  EXPECT_EQ(vars.at(m.loss).dims, (shape_t{1}));
  validate_program(m.startup);
  validate_program(m.test);
}

TEST(builder, several_gradient_contributions_are_summed) {
  // x -> fc_a, x -> fc_b, loss = mean(a + b): the hidden h feeds two layers, so h@GRAD
  // has two contributions renamed h@GRAD@RENAME@0/1 and added by sum before relu_grad.
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 3);
  auto x = b.data("x", {-1, 4}, dtype::fp32);
  auto h = b.fc(x, 5, "relu");
  auto a = b.fc(h, 3, "");
  auto c = b.fc(h, 3, "");
  std::string sum_out = "ab";
  b.append_op("elementwise_add", {{"X", {a}}, {"Y", {c}}}, {{"Out", {sum_out}}},
              {{"axis", std::int32_t{-1}}});
  auto loss = b.mean(sum_out);
  auto pairs = append_backward(main, loss);
  EXPECT_EQ(pairs.size(), 6u);

  const auto& ops = main.blocks(0).ops();
  int sum_index = -1, relu_grad_index = -1;
  for (int i = 0; i < ops.size(); ++i) {
    if (ops[i].type() == "sum") sum_index = i;
    if (ops[i].type() == "relu_grad") relu_grad_index = i;
  }
  ASSERT_GE(sum_index, 0);
  ASSERT_GE(relu_grad_index, 0);
  EXPECT_LT(sum_index, relu_grad_index);
  EXPECT_EQ(input_args(ops[sum_index], "X"),
            (std::vector<std::string>{h + "@GRAD@RENAME@0", h + "@GRAD@RENAME@1"}));
  EXPECT_EQ(output_args(ops[sum_index], "Out"), std::vector<std::string>{h + "@GRAD"});
  EXPECT_EQ(input_args(ops[relu_grad_index], "Out@GRAD"), std::vector<std::string>{h + "@GRAD"});
  validate_program(main);
}

TEST(builder, reloaded_program_equals_the_built_one) {
  mlp_config c;
  c.input_width = 10;
  c.hidden = {7};
  c.optimizer = "momentum";
  auto m = build_mlp(c);
  for (auto format : {program_format::binary, program_format::text}) {
    auto again = parse_program(serialize_program(m.main, format), "memory");
    EXPECT_EQ(serialize_program(again, program_format::binary),
              serialize_program(m.main, program_format::binary));
  }
}

TEST(builder, optimizers_add_their_state) {
  for (const char* kind : {"sgd", "momentum", "adam"}) {
    mlp_config c;
    c.input_width = 6;
    c.hidden = {};
    c.classes = 2;
    c.optimizer = kind;
    auto m = build_mlp(c);
    auto types = op_types(m.main);
    EXPECT_EQ(std::count(types.begin(), types.end(), std::string(kind)), 2) << kind;
    EXPECT_NE(var(m.main, "learning_rate_0"), nullptr);
    EXPECT_EQ(var(m.main, "fc_0.w_0_velocity_0") != nullptr, std::string(kind) == "momentum");
    EXPECT_EQ(var(m.main, "fc_0.w_0_moment1_0") != nullptr, std::string(kind) == "adam");
    validate_program(m.main);
    validate_program(m.startup);
  }
  mlp_config bad;
  bad.optimizer = "rmsprop";
  EXPECT_THROW(build_mlp(bad), error);
}

TEST(builder, analyze_and_clone_for_test) {
  mlp_config c;
  c.input_width = 8;
  c.hidden = {4};
  auto m = build_mlp(c);
  auto roles = analyze_program(m.main);
  EXPECT_EQ(roles.feeds, (std::vector<std::string>{"image", "label"}));
  EXPECT_EQ(roles.loss, m.loss);
  EXPECT_EQ(roles.accuracy, m.accuracy);
  auto test = clone_for_test(m.main, m.label);
  EXPECT_EQ(op_types(test), op_types(m.test));

  // Without an accuracy op, clone_for_test appends top_k + accuracy on the softmax.
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  auto x = b.data("x", {-1, 3}, dtype::fp32);
  auto y = b.data("y", {-1, 1}, dtype::int64);
  auto [softmax, loss] = b.softmax_with_cross_entropy(b.fc(x, 2, ""), y);
  append_backward(main, b.mean(loss));
  auto t = clone_for_test(main, y);
  auto types = op_types(t);
  EXPECT_EQ(types.back(), "accuracy");
  EXPECT_EQ(types[types.size() - 2], "top_k");
  EXPECT_FALSE(analyze_program(t).accuracy.empty());
  validate_program(t);
}

TEST(builder, assign_seeds_fixes_unseeded_random_ops) {
  proto::ProgramDesc startup;
  auto* block = startup.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  for (const char* type : {"uniform_random", "dropout", "gaussian_random"}) {
    const int i = block->ops_size();
    auto* op = block->add_ops();
    op->set_type(type);
    set_attr(*op, "seed", std::int32_t{i == 2 ? 77 : 0});
  }
  proto::ProgramDesc again = startup;
  assign_seeds(startup, 5);
  auto seed = [&](int i) { return find_attr(block->ops(i), "seed")->i(); };
  EXPECT_NE(seed(0), 0);
  EXPECT_NE(seed(1), 0);
  EXPECT_NE(seed(0), seed(1));
  EXPECT_EQ(seed(2), 77); // an explicit seed is kept
  assign_seeds(again, 5); // the same base seed gives the same seeds
  EXPECT_EQ(find_attr(again.blocks(0).ops(0), "seed")->i(), seed(0));
}

} // namespace

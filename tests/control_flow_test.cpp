// Control flow: increment, select_input and conditional_block, alone and in programs with a
// sub-block. A conditional_block is one op handle that runs its sub-block's ops in order on
// its place: the taken branch writes block-0 variables, the untaken one leaves them as they
// were; the SSA graph sees the sub-block's reads and writes even where the op's own slots do
// not list them; the reference executor and 1 and 2 places agree; and a malformed program
// (no sub-block, a bad block index or parent, a Cond that is not one BOOL element, a
// sub-block redeclaring a name) is refused with an error naming the problem.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "graph/attributes.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/exec/scope.hpp"
#include "graph/program_info.hpp"
#include "graph/ssa_graph.hpp"
#include "graph/validate.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::dtype;
using pe::shape_t;
using pe::tensor;
namespace proto = pe::proto;

// --- the ops alone ---------------------------------------------------------------------

TEST(Increment, AddsTheStepInPlaceInXsDtype) {
  pe::scope vars;
  vars.var("c") = tensor::from_vector<std::int64_t>({-1}, {1});
  const auto op = make_op("increment", {{"X", "c"}}, {{"Out", "c"}}, {{"step", 1.f}});
  run_op(op, vars);
  EXPECT_EQ(vars.get("c").data<std::int64_t>()[0], 0);
  run_op(op, vars);
  EXPECT_EQ(vars.get("c").data<std::int64_t>()[0], 1);
  vars.var("f") = values({1.5f}, {});
  run_op(make_op("increment", {{"X", "f"}}, {{"Out", "g"}}, {{"step", 0.25f}}), vars);
  EXPECT_TRUE(tensor_is(vars.get("g"), shape_t{}, {1.75f}));
  EXPECT_TRUE(tensor_is(vars.get("f"), shape_t{}, {1.5f})) << "X is left alone when Out is another variable";
  EXPECT_EQ(infer(op, {{"c", {dtype::int64, {1}}}}).at("c").type, dtype::int64);
}

TEST(Increment, Errors) {
  pe::scope vars;
  vars.var("x") = values({1, 2}, {2});
  EXPECT_NE(error_of(make_op("increment", {{"X", "x"}}, {{"Out", "x"}}), vars).find("X must hold one element, got dims [2]"),
            std::string::npos);
  EXPECT_NE(infer_error(make_op("increment", {{"X", "x"}}, {{"Out", "y"}}), {{"x", {dtype::boolean, {1}}}})
                .find("X must be FP32, INT64 or INT32, got BOOL"),
            std::string::npos);
}

proto::OpDesc select_op() {
  proto::OpDesc op = make_op("select_input", {{"Mask", "mask"}}, {{"Out", "out"}});
  pe::set_input(op, "X", {"a", "b"});
  return op;
}

TEST(SelectInput, PicksTheMaskedInputTheOtherMayBeUnwritten) {
  pe::scope vars;
  vars.var("a"); // the untaken branch's output: no value
  vars.var("b") = values({4, 5}, {2});
  vars.var("mask") = tensor::from_vector<std::int32_t>({1}, {1});
  run_op(select_op(), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2}, {4, 5}));
  vars.var("a") = tensor::from_vector<std::int64_t>({7}, {1}); // any dtype
  vars.var("b") = tensor();
  vars.var("mask") = tensor::from_vector<std::int32_t>({0}, {1});
  run_op(select_op(), vars);
  EXPECT_EQ(vars.get("out").data<std::int64_t>()[0], 7);
}

TEST(SelectInput, Errors) {
  pe::scope vars;
  vars.var("a") = values({1}, {1});
  vars.var("b");
  vars.var("mask") = tensor::from_vector<std::int32_t>({2}, {1});
  EXPECT_NE(error_of(select_op(), vars).find("Mask 2 does not index X's 2 variables"), std::string::npos);
  vars.var("mask") = tensor::from_vector<std::int32_t>({1}, {1});
  EXPECT_NE(error_of(select_op(), vars).find("X[1], which Mask selects, has no value"), std::string::npos);
  vars.var("mask") = tensor::from_vector<std::int64_t>({0}, {1});
  EXPECT_NE(error_of(select_op(), vars).find("Mask must be one INT32 element, got INT64 [1]"), std::string::npos);
  EXPECT_NE(infer_error(select_op(), {{"a", {dtype::fp32, {1}}}, {"b", {dtype::int64, {1}}}, {"mask", {dtype::int32, {1}}}})
                .find("X[1] is INT64, X[0] FP32"),
            std::string::npos);
  const auto out = infer(select_op(), {{"a", {dtype::fp32, {2, 3}}}, {"b", {dtype::fp32, {2, 4}}}, {"mask", {dtype::int32, {1}}}});
  EXPECT_EQ(out.at("out").dims, (shape_t{2, -1})) << "dims where the branches agree";
}

TEST(FillConstant, Bool) {
  pe::scope vars;
  run_op(make_op("fill_constant", {}, {{"Out", "t"}},
                 {{"shape", std::vector<std::int64_t>{2}}, {"dtype", static_cast<std::int32_t>(dtype::boolean)},
                  {"value", 1.f}, {"str_value", std::string("1.0")}}),
         vars);
  EXPECT_EQ((elements_of<bool, int>(vars.get("t"))), (std::vector<int>{1, 1}));
}

// --- a program with a sub-block --------------------------------------------------------

/// Declares `name` in `block`.
void declare(proto::BlockDesc& block, const std::string& name, dtype type, const shape_t& dims,
             bool persistable = false) {
  proto::VarDesc& v = *block.add_vars();
  v.set_name(name);
  v.set_persistable(persistable);
  v.mutable_type()->set_type(proto::VarType::LOD_TENSOR);
  auto& t = *v.mutable_type()->mutable_lod_tensor()->mutable_tensor();
  t.set_data_type(static_cast<proto::VarType::Type>(type));
  for (auto d : dims) t.add_dims(d);
}

void add_op(proto::BlockDesc& block, const proto::OpDesc& op) { *block.add_ops() = op; }

void set_block_attr(proto::OpDesc& op, int block) {
  proto::OpDesc::Attr& a = *op.add_attrs();
  a.set_name("sub_block");
  a.set_type(proto::BLOCK);
  a.set_block_idx(block);
}

proto::OpDesc fill(const std::string& out, dtype type, const shape_t& dims, float value) {
  return make_op("fill_constant", {}, {{"Out", out}},
                 {{"shape", std::vector<std::int64_t>(dims.begin(), dims.end())},
                  {"dtype", static_cast<std::int32_t>(type)}, {"value", value}});
}

/// Startup: step = 0 (INT64 [1]), w = 3, y = 7 (FP32 [2]).
/// Main, block 0: step += 1; flag = step < 2; conditional_block(flag) runs block 1;
/// z = y + 1. Block 1: t = 2 w; y = t + y (y accumulates 2 w while the step is below 2).
/// The conditional_block's own slots name only Cond and Scope: what block 1 reads (w, y)
/// and writes (t, y) is found in the block.
struct cond_program {
  proto::ProgramDesc startup, main;
  cond_program() {
    proto::BlockDesc& s = *startup.add_blocks();
    s.set_idx(0);
    s.set_parent_idx(-1);
    declare(s, "step", dtype::int64, {1}, true);
    declare(s, "w", dtype::fp32, {2}, true);
    declare(s, "y", dtype::fp32, {2}, true);
    add_op(s, fill("step", dtype::int64, {1}, 0));
    add_op(s, fill("w", dtype::fp32, {2}, 3));
    add_op(s, fill("y", dtype::fp32, {2}, 7));

    proto::BlockDesc& b0 = *main.add_blocks();
    b0.set_idx(0);
    b0.set_parent_idx(-1);
    declare(b0, "step", dtype::int64, {1}, true);
    declare(b0, "w", dtype::fp32, {2}, true);
    declare(b0, "y", dtype::fp32, {2}, true);
    declare(b0, "limit", dtype::int64, {1});
    declare(b0, "flag", dtype::boolean, {1});
    declare(b0, "z", dtype::fp32, {2});
    proto::VarDesc& scopes = *b0.add_vars();
    scopes.set_name("scopes");
    scopes.mutable_type()->set_type(proto::VarType::STEP_SCOPES);
    add_op(b0, make_op("increment", {{"X", "step"}}, {{"Out", "step"}}, {{"step", 1.f}}));
    add_op(b0, fill("limit", dtype::int64, {1}, 2));
    add_op(b0, make_op("less_than", {{"X", "step"}, {"Y", "limit"}}, {{"Out", "flag"}}));
    proto::OpDesc cond = make_op("conditional_block", {{"Cond", "flag"}}, {{"Scope", "scopes"}},
                                 {{"is_scalar_condition", true}});
    set_block_attr(cond, 1);
    add_op(b0, cond);
    add_op(b0, make_op("scale", {{"X", "y"}}, {{"Out", "z"}}, {{"bias", 1.f}}));

    proto::BlockDesc& b1 = *main.add_blocks();
    b1.set_idx(1);
    b1.set_parent_idx(0);
    declare(b1, "t", dtype::fp32, {2});
    add_op(b1, make_op("scale", {{"X", "w"}}, {{"Out", "t"}}, {{"scale", 2.f}}));
    add_op(b1, make_op("elementwise_add", {{"X", "t"}, {"Y", "y"}}, {{"Out", "y"}}));
  }
  proto::OpDesc& cond_op() { return *main.mutable_blocks(0)->mutable_ops(3); }
};

constexpr int cond_index = 3;

/// y and z after each of 3 steps: taken once (y = 7 + 6), then left alone.
void expect_three_steps(const std::function<std::vector<tensor>()>& step) {
  const std::vector<float> y_after[] = {{13, 13}, {13, 13}, {13, 13}};
  for (int s = 0; s < 3; ++s) {
    const auto fetched = step();
    EXPECT_TRUE(tensor_is(fetched.at(0), {2}, y_after[s])) << "y after step " << s + 1;
    EXPECT_TRUE(tensor_is(fetched.at(1), {2}, {14, 14})) << "z after step " << s + 1;
  }
}

TEST(ConditionalBlock, TakenOnceThenItsOutputsStayAsTheyWere) {
  cond_program p;
  pe::scope vars;
  pe::reference_executor(p.startup, vars).run({}, {});
  pe::reference_executor exe(p.main, vars);
  expect_three_steps([&] { return exe.run({}, {"y", "z"}); });
  EXPECT_EQ(vars.get("step").data<std::int64_t>()[0], 3);
}

TEST(ConditionalBlock, OneAndTwoPlacesRunTheSubBlockOnEveryPlace) {
  for (int places : {1, 2}) {
    cond_program p;
    std::vector<pe::place> where;
    for (int i = 0; i < places; ++i) where.push_back(pe::place::cpu(i));
    pe::parallel_executor exe(where, p.startup, p.main);
    for (int s = 0; s < 3; ++s) { // every place's y and z, as fetched: [fetch][place]
      const auto fetched = exe.run_per_place({}, {"y", "z"});
      for (int i = 0; i < places; ++i) {
        EXPECT_TRUE(tensor_is(fetched.at(0).at(i), {2}, {13, 13})) << "y after step " << s + 1 << ", place " << i;
        EXPECT_TRUE(tensor_is(fetched.at(1).at(i), {2}, {14, 14})) << "z after step " << s + 1 << ", place " << i;
      }
    }
    for (int i = 0; i < places; ++i) {
      EXPECT_TRUE(tensor_is(exe.host_value("y", i), {2}, {13, 13})) << "place " << i;
      EXPECT_EQ(exe.host_value("step", i).data<std::int64_t>()[0], 3) << "place " << i;
    }
  }
}

TEST(ConditionalBlock, TheSsaGraphSeesTheSubBlocksReadsAndWrites) {
  cond_program p;
  const pe::ssa_graph g = pe::build_ssa_graph(p.main, 2, {}, {"z"});
  const pe::op_handle* cond = nullptr;
  const pe::op_handle* scale = nullptr;
  for (const auto& op : g.ops)
    if (op.what == pe::op_handle::kind::computation && op.place == 1) {
      if (op.op_index == cond_index) cond = &op;
      if (op.op_index == cond_index + 1) scale = &op;
    }
  ASSERT_NE(cond, nullptr);
  ASSERT_NE(scale, nullptr);
  auto names = [&](const std::vector<int>& ids) {
    std::vector<std::string> out;
    for (int id : ids)
      if (!g.vars[static_cast<std::size_t>(id)].dummy) out.push_back(g.vars[static_cast<std::size_t>(id)].name);
    return out;
  };
  const auto reads = names(cond->inputs), writes = names(cond->outputs);
  for (const char* name : {"flag", "w", "y"})
    EXPECT_NE(std::find(reads.begin(), reads.end(), name), reads.end()) << name << " is read";
  EXPECT_EQ(std::find(reads.begin(), reads.end(), "t"), reads.end()) << "t is written before it is read";
  for (const char* name : {"scopes", "t", "y"})
    EXPECT_NE(std::find(writes.begin(), writes.end(), name), writes.end()) << name << " is written";
  // z = y + 1 reads the version of y the sub-block wrote.
  bool reads_cond_y = false;
  for (int id : scale->inputs) {
    const auto& v = g.vars[static_cast<std::size_t>(id)];
    if (v.name == "y" && v.generated_op == cond->id) reads_cond_y = true;
  }
  EXPECT_TRUE(reads_cond_y);
}

TEST(ConditionalBlock, AVariableReadOnlyInsideTheSubBlockIsAFeed) {
  cond_program p;
  declare(*p.main.mutable_blocks(0), "shift", dtype::fp32, {2});
  *p.main.mutable_blocks(1)->mutable_ops(1)->mutable_inputs(0)->mutable_arguments(0) = "shift"; // y = shift + y
  EXPECT_EQ(pe::analyze_program(p.main).feeds, (std::vector<std::string>{"shift"}))
      << "t is written before block 1 reads it; shift is read first";
  pe::scope vars;
  pe::reference_executor(p.startup, vars).run({}, {});
  pe::reference_executor exe(p.main, vars);
  EXPECT_NE(error_of([&] { exe.run({}, {"z"}); }).find("missing feed 'shift' (read by op #3 (conditional_block))"),
            std::string::npos);
  const auto fetched = exe.run({{"shift", values({1, 2}, {2})}}, {"y"});
  EXPECT_TRUE(tensor_is(fetched.at(0), {2}, {8, 9}));
}

/// The error validate_program gives `p.main`.
std::string validation_error(const cond_program& p) {
  return error_of([&] { pe::validate_program(p.main); });
}

TEST(ConditionalBlock, MalformedProgramsAreRefusedNamingTheProblem) {
  {
    cond_program p;
    p.cond_op().mutable_attrs()->RemoveLast(); // sub_block
    EXPECT_NE(validation_error(p).find("op #3 (conditional_block): has no BLOCK attribute 'sub_block'"),
              std::string::npos)
        << validation_error(p);
  }
  {
    cond_program p;
    p.cond_op().mutable_attrs()->rbegin()->set_block_idx(7);
    EXPECT_NE(validation_error(p).find("sub_block 7 is not a block of the program (it has 2)"), std::string::npos)
        << validation_error(p);
  }
  {
    cond_program p;
    p.main.mutable_blocks(1)->set_parent_idx(5);
    EXPECT_NE(validation_error(p).find("sub_block 1 has parent block 5, not the op's block 0"), std::string::npos)
        << validation_error(p);
  }
  {
    cond_program p;
    declare(*p.main.mutable_blocks(1), "w", dtype::fp32, {2});
    EXPECT_NE(validation_error(p).find("variable 'w' is declared twice (block 1 declares a name of a block around it)"),
              std::string::npos)
        << validation_error(p);
  }
  {
    cond_program p; // an error in the sub-block names the op that runs it
    *p.main.mutable_blocks(1)->mutable_ops(0)->mutable_inputs(0)->mutable_arguments(0) = "step";
    EXPECT_NE(validation_error(p).find("op #3 (conditional_block): in sub_block 1: op #0 (scale): X must be FP32, got INT64"),
              std::string::npos)
        << validation_error(p);
  }
  {
    cond_program p;
    pe::set_input(p.cond_op(), "Cond", {"step"});
    EXPECT_NE(validation_error(p).find("Cond 'step': Cond must be BOOL, got INT64"), std::string::npos)
        << validation_error(p);
  }
  {
    cond_program p;
    proto::VarDesc& flag = *p.main.mutable_blocks(0)->mutable_vars(4);
    ASSERT_EQ(flag.name(), "flag");
    flag.mutable_type()->mutable_lod_tensor()->mutable_tensor()->set_dims(0, 2);
    p.main.mutable_blocks(0)->mutable_ops(2)->clear_outputs(); // the less_than would infer [1]
    pe::set_output(*p.main.mutable_blocks(0)->mutable_ops(2), "Out", {"limit2"});
    declare(*p.main.mutable_blocks(0), "limit2", dtype::boolean, {1});
    EXPECT_NE(validation_error(p).find("Cond must hold one element (is_scalar_condition), got dims [2]"),
              std::string::npos)
        << validation_error(p);
  }
  {
    cond_program p; // one block for two ops
    add_op(*p.main.mutable_blocks(0), p.cond_op());
    EXPECT_NE(validation_error(p).find("op #5 (conditional_block): sub_block 1 is run by another op too"),
              std::string::npos)
        << validation_error(p);
    // Walks of an unvalidated program refuse a block entered twice too (nested, each visit
    // would double the work): block 1 runs block 2 from two ops.
    proto::BlockDesc& b2 = *p.main.add_blocks();
    b2.set_idx(2);
    b2.set_parent_idx(1);
    proto::OpDesc inner = make_op("conditional_block", {{"Cond", "flag"}}, {}, {{"is_scalar_condition", true}});
    set_block_attr(inner, 2);
    add_op(*p.main.mutable_blocks(1), inner);
    add_op(*p.main.mutable_blocks(1), inner);
    EXPECT_NE(error_of([&] { pe::analyze_program(p.main); }).find("sub_block 2 is run by another op too"),
              std::string::npos);
  }
  {
    cond_program p; // bound without its program, the op cannot find its block
    pe::scope vars;
    EXPECT_NE(error_of([&] { pe::bound_op(p.cond_op(), vars, pe::place::cpu(), cond_index); })
                  .find("op #3 (conditional_block) runs a sub-block: bind it with its program"),
              std::string::npos);
  }
}

TEST(ConditionalBlock, ACondOfSeveralElementsFailsTheStepNamingIt) {
  // Cond fed with unknown dims passes validation; two elements fail the kernel.
  cond_program p;
  proto::BlockDesc& b0 = *p.main.mutable_blocks(0);
  declare(b0, "fed_flag", dtype::boolean, {-1});
  pe::set_input(p.cond_op(), "Cond", {"fed_flag"});
  pe::scope vars;
  pe::reference_executor(p.startup, vars).run({}, {});
  pe::reference_executor exe(p.main, vars);
  const auto message = error_of([&] {
    exe.run({{"fed_flag", tensor::from_vector<bool>({true, true}, {2})}}, {"z"});
  });
  EXPECT_NE(message.find("op #3 (conditional_block) on cpu:0: conditional_block: Cond must hold one element "
                         "(is_scalar_condition), got dims [2]"),
            std::string::npos)
      << message;
  const auto fetched = exe.run({{"fed_flag", tensor::from_vector<bool>({false}, {1})}}, {"y"});
  EXPECT_TRUE(tensor_is(fetched.at(0), {2}, {7, 7})) << "a false Cond runs nothing";
}

TEST(ConditionalBlock, AnErrorInsideTheSubBlockNamesItsBlock) {
  cond_program p;
  pe::scope vars;
  pe::reference_executor(p.startup, vars).run({}, {});
  vars.var("w") = tensor(); // w loses its value: block 1's first op fails
  pe::reference_executor exe(p.main, vars);
  const auto message = error_of([&] { exe.run({}, {"z"}); });
  EXPECT_NE(message.find("op #3 (conditional_block) on cpu:0: block 1 op #0 (scale) on cpu:0: input variable 'w' has no value"),
            std::string::npos)
      << message;
}

} // namespace

// lookup_table_v2 (nn.Embedding): forward values with INT64 and INT32 ids of rank 1 and 2,
// padding_idx positive, negative and none (and as Paddle 1.x's INT), the grad accumulating
// repeated ids in index order and skipping padding_idx, the gradient of W against central
// differences, the attributes Paddle writes that the engine ignores, shape inference, the
// refusals (an id outside [0, V), is_sparse against W@GRAD's declaration, bad dtypes and dims,
// padding_idx out of range),
// the grad maker as Paddle's and append_backward emitting the grad op.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "graph/attributes.hpp"
#include "graph/backward.hpp"
#include "graph/builder.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/exec/scope.hpp"
#include "graph/op_registry.hpp"
#include "graph/validate.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::shape_t;
using pe::tensor;

/// lookup_table_v2 over W = w, Ids = ids, writing out.
pe::proto::OpDesc lookup_op(const attr_list& attrs = {}) {
  return make_op("lookup_table_v2", {{"W", "w"}, {"Ids", "ids"}}, {{"Out", "out"}}, attrs);
}

/// lookup_table_v2_grad as the grad maker emits it: Out@GRAD = dout, W@GRAD = dw.
pe::proto::OpDesc lookup_grad_op(const attr_list& attrs = {}) {
  return make_op("lookup_table_v2_grad", {{"W", "w"}, {"Ids", "ids"}, {"Out@GRAD", "dout"}},
                 {{"W@GRAD", "dw"}}, attrs);
}

attr_list padding(std::int64_t padding_idx) { return {{"padding_idx", padding_idx}}; }

tensor ids64(std::vector<std::int64_t> v, shape_t dims) {
  return tensor::from_vector(v, std::move(dims));
}

tensor ids32(std::vector<std::int32_t> v, shape_t dims) {
  return tensor::from_vector(v, std::move(dims));
}

/// Row r of iota({5, 3}): 3r, 3r + 1, 3r + 2.
std::vector<float> table_row(std::int64_t r) {
  const auto v = static_cast<float>(3 * r);
  return {v, v + 1, v + 2};
}

/// The rows of iota({5, 3}) for `rows`, a row of zeros for -1.
std::vector<float> gathered(const std::vector<std::int64_t>& rows) {
  std::vector<float> out;
  for (const std::int64_t r : rows) {
    const std::vector<float> row = r < 0 ? std::vector<float>(3, 0.f) : table_row(r);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

TEST(LookupTableV2, GathersRowsWithInt64AndInt32Ids) {
  pe::scope vars;
  vars.var("w") = iota({5, 3});
  // Rank 1, INT64, a repeated id: Out [4, 3].
  vars.var("ids") = ids64({3, 0, 3, 4}, {4});
  run_op(lookup_op(), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {4, 3}, gathered({3, 0, 3, 4})));
  // Rank 2, INT32: Out [2, 2, 3].
  vars.var("ids") = ids32({1, 4, 2, 1}, {2, 2});
  run_op(lookup_op(), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 2, 3}, gathered({1, 4, 2, 1})));
  // Rank 2 INT64 with a last dim of 1 (as Paddle 1.x fed ids): kept, Out [3, 1, 3].
  vars.var("ids") = ids64({2, 0, 4}, {3, 1});
  run_op(lookup_op(), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {3, 1, 3}, gathered({2, 0, 4})));
  // No ids (an uneven split can leave a place none): Out [0, 3].
  vars.var("ids") = ids64({}, {0});
  run_op(lookup_op(), vars);
  EXPECT_EQ(vars.get("out").shape(), (shape_t{0, 3}));
}

TEST(LookupTableV2, PaddingIdxOutputsZeros) {
  pe::scope vars;
  vars.var("w") = iota({5, 3});
  vars.var("ids") = ids64({2, 3, 2, 0}, {2, 2});
  // padding_idx 2: the two ids 2 give zeros.
  run_op(lookup_op(padding(2)), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 2, 3}, gathered({-1, 3, -1, 0})));
  // padding_idx -2 is row V - 2 = 3.
  run_op(lookup_op(padding(-2)), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 2, 3}, gathered({2, -1, 2, 0})));
  // -V is row 0.
  run_op(lookup_op(padding(-5)), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 2, 3}, gathered({2, 3, 2, -1})));
  // -1 is none (the default too).
  run_op(lookup_op(padding(-1)), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 2, 3}, gathered({2, 3, 2, 0})));
  // Paddle 1.x wrote padding_idx as INT; INT32 ids with padding too.
  vars.var("ids") = ids32({2, 3, 2, 0}, {4});
  run_op(lookup_op({{"padding_idx", std::int32_t{3}}}), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {4, 3}, gathered({2, -1, 2, 0})));
}

TEST(LookupTableV2, AcceptsTheAttributesPaddleWrites) {
  // What paddle.nn.Embedding's program holds besides padding_idx and is_sparse: ignored.
  const attr_list attrs = {{"padding_idx", std::int64_t{-1}},
                           {"is_sparse", false},
                           {"is_distributed", false},
                           {"remote_prefetch", false},
                           {"entry_config", std::string("")},
                           {"entry", std::string("none")},
                           {"table_class", std::string("none")},
                           {"table_names", std::vector<std::string>{}},
                           {"epmap", std::vector<std::string>{}},
                           {"height_sections", std::vector<std::int64_t>{}},
                           {"trainer_id", std::int32_t{0}},
                           {"slot", std::int32_t{0}},
                           {"op_role", std::int32_t{0}}};
  pe::scope vars;
  vars.var("w") = iota({5, 3});
  vars.var("ids") = ids64({4, 1}, {2});
  run_op(lookup_op(attrs), vars);
  EXPECT_TRUE(tensor_is(vars.get("out"), {2, 3}, gathered({4, 1})));
  const pe::var_table declared = {{"w", {pe::dtype::fp32, {5, 3}}},
                                  {"ids", {pe::dtype::int64, {-1}}}};
  EXPECT_EQ(infer(lookup_op(attrs), declared).at("out").dims, (shape_t{-1, 3}));
}

TEST(LookupTableV2Grad, AccumulatesRepeatedIdsInIndexOrderAndSkipsPadding) {
  // Ids 1, 3, 1, 0, 1, 4 with padding_idx 4: row 1 sums Out@GRAD rows 0, 2 and 4 (in that
  // order, in FP32: exactly what the kernel must give), row 3 is row 1, row 0 row 3, rows 2
  // and 4 (never read; padding) are zero.
  const tensor dout = random_tensor({2, 3, 3}, 7, -1.f, 1.f); // Out@GRAD rows 0..5
  const auto d = [&](std::int64_t i, std::int64_t j) { return dout.data<float>()[i * 3 + j]; };
  std::vector<float> expected(15, 0.f);
  for (const auto& [row, from] : std::vector<std::pair<int, int>>{{1, 0}, {3, 1}, {1, 2}, {0, 3}, {1, 4}})
    for (int j = 0; j < 3; ++j) expected[static_cast<std::size_t>(row * 3 + j)] += d(from, j);
  for (const bool int32 : {false, true}) {
    SCOPED_TRACE(int32 ? "INT32 ids" : "INT64 ids");
    pe::scope vars;
    vars.var("w") = random_tensor({5, 3}, 8);
    vars.var("ids") = int32 ? ids32({1, 3, 1, 0, 1, 4}, {2, 3}) : ids64({1, 3, 1, 0, 1, 4}, {2, 3});
    vars.var("dout") = dout.clone();
    vars.var("dw") = random_tensor({5, 3}, 9); // stale values to be overwritten
    run_op(lookup_grad_op(padding(4)), vars);
    ASSERT_EQ(vars.get("dw").shape(), (shape_t{5, 3}));
    EXPECT_EQ(elements_of<float>(vars.get("dw")), expected); // bit for bit
    // Without padding_idx row 4 gets Out@GRAD row 5.
    run_op(lookup_grad_op(), vars);
    std::vector<float> unpadded = expected;
    for (int j = 0; j < 3; ++j) unpadded[static_cast<std::size_t>(12 + j)] = d(5, j);
    EXPECT_EQ(elements_of<float>(vars.get("dw")), unpadded);
  }
}

TEST(LookupTableV2Grad, MatchesCentralDifferences) {
  // Out is linear in W: the differences are exact but for FP32 rounding. Repeated ids (12 ids
  // over 6 rows) and a padding row, whose gradient is zero.
  const tensor w = random_tensor({6, 4}, 21);
  const tensor ids = random_labels({3, 4}, 6, 22);
  const auto values64 = ids.values<std::int64_t>();
  const tensor ids_int32 = ids32(std::vector<std::int32_t>(values64.begin(), values64.end()), {3, 4});
  for (const auto& [why, id_tensor, padding_idx] :
       std::vector<std::tuple<const char*, tensor, std::int64_t>>{
           {"INT64 ids", ids, -1}, {"INT64 ids, padding_idx 2", ids, 2},
           {"INT32 ids, padding_idx -1 (none)", ids_int32, -1},
           {"INT32 ids, padding_idx -3 (row 3)", ids_int32, -3}}) {
    SCOPED_TRACE(why);
    EXPECT_TRUE(gradient_matches({.op_type = "lookup_table_v2",
                                  .inputs = {{"W", {w}}, {"Ids", {id_tensor}}},
                                  .attrs = padding(padding_idx),
                                  .check_slots = {"W"}}));
  }
}

TEST(LookupTableV2, RefusesIdsOutsideTheTable) {
  pe::scope vars;
  vars.var("w") = iota({5, 3});
  vars.var("dout") = tensor::zeros(pe::dtype::fp32, {3, 3});
  for (const std::int64_t bad : {5, -1, -2}) {
    vars.var("ids") = ids64({1, 0, bad}, {3});
    const std::string id = std::to_string(bad);
    std::string message = error_of(lookup_op(), vars);
    EXPECT_TRUE(contains(message, "lookup_table_v2: Ids[2] = " + id +
                                      " is outside [0, 5) (W has V = 5 rows) and is not padding_idx"))
        << message;
    message = error_of(lookup_grad_op(), vars);
    EXPECT_TRUE(contains(message, "lookup_table_v2_grad: Ids[2] = " + id + " is outside [0, 5)"))
        << message;
  }
  // INT32 ids too; the last row, V - 1, is in range.
  vars.var("ids") = ids32({7}, {1});
  EXPECT_TRUE(contains(error_of(lookup_op(), vars), "lookup_table_v2: Ids[0] = 7 is outside [0, 5)"));
  vars.var("ids") = ids64({4, 4}, {2});
  EXPECT_EQ(error_of(lookup_op(padding(-1)), vars), "");
  // padding_idx outside [-V, V) is refused by the kernels too.
  const std::string message = error_of(lookup_op(padding(5)), vars);
  EXPECT_TRUE(contains(message, "lookup_table_v2: padding_idx 5 is out of range for W of 5 rows "
                                "(valid: [-5, 5), or -1 for none)"))
      << message;
}

TEST(LookupTableV2, IsSparseWantsASelectedRowsGradientAndAppendBackwardDeclaresOne) {
  const attr_list sparse = {{"is_sparse", true}};
  const pe::var_table declared = {{"w", {pe::dtype::fp32, {5, 3}}},
                                  {"ids", {pe::dtype::int64, {-1, 2}}},
                                  {"dout", {pe::dtype::fp32, {-1, 2, 3}}},
                                  {"dw", {pe::dtype::fp32, {5, 3}}}};
  EXPECT_EQ(infer_error(lookup_op(sparse), declared), "");
  // W@GRAD declared a tensor: is_sparse disagrees with it.
  std::string message = infer_error(lookup_grad_op(sparse), declared);
  EXPECT_TRUE(contains(message, "op #0 (lookup_table_v2_grad): is_sparse is true but W@GRAD is "
                                "declared a dense tensor"))
      << message;
  pe::var_table sparse_declared = declared;
  sparse_declared["dw"].selected_rows = true;
  EXPECT_EQ(infer_error(lookup_grad_op(sparse), sparse_declared), "");
  EXPECT_TRUE(contains(infer_error(lookup_grad_op({{"is_sparse", false}}), sparse_declared),
                       "is_sparse is false but W@GRAD is declared SELECTED_ROWS"));

  // The builder's append_backward declares the gradient of a sparse lookup SELECTED_ROWS,
  // and the program validates.
  pe::proto::ProgramDesc main, startup;
  pe::program_builder b(main, startup, 1);
  const std::string ids = b.data("ids", {-1, 2}, pe::dtype::int64);
  const std::string w = b.parameter("emb.w", {5, 3}, pe::program_builder::init::xavier_uniform);
  b.append_op("lookup_table_v2", {{"W", {w}}, {"Ids", {ids}}}, {{"Out", {"emb.out"}}}, sparse);
  ASSERT_EQ(pe::append_backward(main, b.mean("emb.out")).size(), 1u);
  const pe::var_table vars = pe::validate_program(main);
  EXPECT_TRUE(vars.at(pe::grad_name(w)).selected_rows);
  EXPECT_EQ(vars.at(pe::grad_name(w)).dims, (shape_t{5, 3}));
}

TEST(LookupTableV2, InfersShapes) {
  const pe::var_table vars = {{"w", {pe::dtype::fp32, {10, 4}}},
                              {"w_unknown", {pe::dtype::fp32, {-1, 4}}},
                              {"ids2", {pe::dtype::int64, {-1, 3}}},
                              {"ids1", {pe::dtype::int32, {-1}}},
                              {"ids0", {pe::dtype::int64, {}}},
                              {"dout", {pe::dtype::fp32, {-1, 3, 4}}}};
  const auto out_of = [&](const char* w, const char* ids, const attr_list& attrs = {}) {
    return infer(make_op("lookup_table_v2", {{"W", w}, {"Ids", ids}}, {{"Out", "out"}}, attrs), vars)
        .at("out");
  };
  EXPECT_EQ(out_of("w", "ids2").dims, (shape_t{-1, 3, 4}));
  EXPECT_EQ(out_of("w", "ids2").type, pe::dtype::fp32);
  EXPECT_EQ(out_of("w", "ids1").dims, (shape_t{-1, 4}));
  EXPECT_EQ(out_of("w", "ids0").dims, (shape_t{4}));
  // padding_idx in [-V, V) (or -1); with V unknown any padding_idx passes shape inference.
  EXPECT_EQ(out_of("w", "ids2", padding(9)).dims, (shape_t{-1, 3, 4}));
  EXPECT_EQ(out_of("w", "ids2", padding(-10)).dims, (shape_t{-1, 3, 4}));
  EXPECT_EQ(out_of("w_unknown", "ids2", padding(-20)).dims, (shape_t{-1, 3, 4}));

  const auto grad = make_op("lookup_table_v2_grad", {{"W", "w"}, {"Ids", "ids2"}, {"Out@GRAD", "dout"}},
                            {{"W@GRAD", "dw"}});
  EXPECT_EQ(infer(grad, vars).at("dw").dims, (shape_t{10, 4}));
}

TEST(LookupTableV2, RefusesBadDtypesDimsAndPaddingIdx) {
  const pe::var_table vars = {{"w", {pe::dtype::fp32, {10, 4}}},
                              {"w3", {pe::dtype::fp32, {10, 4, 2}}},
                              {"wi", {pe::dtype::int64, {10, 4}}},
                              {"ids", {pe::dtype::int64, {-1, 3}}},
                              {"idsf", {pe::dtype::fp32, {-1, 3}}},
                              {"dout_bad", {pe::dtype::fp32, {-1, 3, 5}}}};
  const auto error_for = [&](const char* w, const char* ids, const attr_list& attrs = {}) {
    return infer_error(make_op("lookup_table_v2", {{"W", w}, {"Ids", ids}}, {{"Out", "out"}}, attrs),
                       vars);
  };
  EXPECT_TRUE(contains(error_for("w", "idsf"), "op #0 (lookup_table_v2): Ids must be INT64 or INT32, got FP32"));
  EXPECT_TRUE(contains(error_for("w3", "ids"), "W must be [V, D] (rank 2), got [10, 4, 2]"));
  EXPECT_TRUE(contains(error_for("wi", "ids"), "W must be FP32, got INT64"));
  for (const std::int64_t bad : {10, 11, -11}) {
    const std::string message = error_for("w", "ids", padding(bad));
    EXPECT_TRUE(contains(message, "padding_idx " + std::to_string(bad) +
                                      " is out of range for W of 10 rows (valid: [-10, 10), or -1 for none)"))
        << message;
  }
  const std::string message = infer_error(
      make_op("lookup_table_v2_grad", {{"W", "w"}, {"Ids", "ids"}, {"Out@GRAD", "dout_bad"}},
              {{"W@GRAD", "dw"}}),
      vars);
  EXPECT_TRUE(contains(message, "op #0 (lookup_table_v2_grad): Out@GRAD [-1, 3, 5] does not match Out "
                                "[-1, 3, 4] (Ids' dims + [D])"))
      << message;

  // The kernels check the same.
  pe::scope scope;
  scope.var("w") = iota({5, 3});
  scope.var("ids") = values({1, 2}, {2});
  EXPECT_TRUE(contains(error_of(lookup_op(), scope), "lookup_table_v2: Ids must be INT64 or INT32, got FP32"));
  scope.var("w") = iota({15});
  scope.var("ids") = ids64({1}, {1});
  EXPECT_TRUE(contains(error_of(lookup_op(), scope), "lookup_table_v2: W must be [V, D] (rank 2), got [15]"));
  scope.var("w") = iota({5, 3});
  scope.var("dout") = tensor::zeros(pe::dtype::fp32, {1, 4});
  EXPECT_TRUE(contains(error_of(lookup_grad_op(), scope),
                       "lookup_table_v2_grad: Out@GRAD has dims [1, 4], expected [1, 3]"));
}

TEST(LookupTableV2, GradMakerAsPaddle) {
  const attr_list attrs = padding(3);
  const pe::op_schema& schema = *pe::op_registry::global().find("lookup_table_v2");
  const auto grads = schema.make_grad(lookup_op(attrs));
  ASSERT_EQ(grads.size(), 1u);
  const auto& grad = grads[0];
  EXPECT_EQ(grad.type(), "lookup_table_v2_grad");
  EXPECT_EQ(pe::input_args(grad, "W"), std::vector<std::string>{"w"});
  EXPECT_EQ(pe::input_args(grad, "Ids"), std::vector<std::string>{"ids"});
  EXPECT_EQ(pe::input_args(grad, "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_TRUE(pe::input_args(grad, "Out").empty());
  EXPECT_EQ(pe::output_args(grad, "W@GRAD"), std::vector<std::string>{"w@GRAD"});
  EXPECT_TRUE(pe::output_args(grad, "Ids@GRAD").empty()); // no gradient for Ids
  EXPECT_EQ(grad.outputs_size(), 1);
  EXPECT_EQ(pe::from_proto(*pe::find_attr(grad, "padding_idx")), pe::attribute(std::int64_t{3}));
}

TEST(LookupTableV2, AppendBackwardEmitsItsGrad) {
  // loss = mean(lookup_table_v2(W [6, 3], Ids [-1, 2]), padding_idx 0): each element of Out
  // weighs 1 / 18 for 3 rows of ids, so W@GRAD[v] = (times v appears) / 18 in every column,
  // 0 for the padding row 0.
  pe::proto::ProgramDesc main, startup;
  pe::program_builder b(main, startup, 1);
  const std::string ids = b.data("ids", {-1, 2}, pe::dtype::int64);
  const std::string w = b.parameter("emb.w", {6, 3}, pe::program_builder::init::xavier_uniform);
  b.append_op("lookup_table_v2", {{"W", {w}}, {"Ids", {ids}}}, {{"Out", {"emb.out"}}},
              {{"padding_idx", std::int64_t{0}}, {"is_sparse", false}});
  const auto grads = pe::append_backward(main, b.mean("emb.out"));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].first, w);
  std::vector<std::string> types;
  for (const auto& op : main.blocks(0).ops()) types.push_back(op.type());
  EXPECT_EQ(std::count(types.begin(), types.end(), "lookup_table_v2_grad"), 1)
      << ::testing::PrintToString(types);
  const pe::var_table declared = pe::validate_program(main);
  EXPECT_EQ(declared.at("emb.out").dims, (shape_t{-1, 2, 3}));
  EXPECT_EQ(declared.at(pe::grad_name(w)).dims, (shape_t{6, 3}));
  EXPECT_EQ(declared.count(pe::grad_name(ids)), 0u);

  pe::scope vars;
  pe::reference_executor(startup, vars).run({}, {});
  const auto out = pe::reference_executor(main, vars)
                       .run({{ids, ids64({1, 0, 1, 5, 2, 1}, {3, 2})}}, {pe::grad_name(w)});
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> expected;
  for (const float count : {0.f, 3.f, 1.f, 0.f, 0.f, 1.f})
    for (int j = 0; j < 3; ++j) expected.push_back(count / 18);
  EXPECT_TRUE(tensor_is(out[0], {6, 3}, expected));
}

} // namespace

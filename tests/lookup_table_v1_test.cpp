// lookup_table (v1, fluid.layers.embedding) and lookup_table_grad: Paddle's LookupTableOp
// takes INT64 Ids whose last dim is 1 and drops that 1 from Out; otherwise it is
// lookup_table_v2. Checked here: Out and W@GRAD (dense, and SELECTED_ROWS with is_sparse)
// equal v2's on the same ids bit for bit, padding_idx, shape inference, the refusals (INT32
// ids, a last dim other than 1, Out@GRAD of v2's dims), the grad maker, and a sparse model
// trained on 2 places whose losses are those of the same model written with v2.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "core/selected_rows.hpp"
#include "graph/attributes.hpp"
#include "graph/backward.hpp"
#include "graph/builder.hpp"
#include "graph/optimizer.hpp"
#include "graph/op_registry.hpp"
#include "graph/validate.hpp"
#include "tests/support/grad_check.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::shape_t;
using pe::tensor;

/// lookup_table of `type` ("lookup_table" or "lookup_table_v2") over W = w, Ids = ids.
pe::proto::OpDesc lookup(const std::string& type, const attr_list& attrs = {}) {
  return make_op(type, {{"W", "w"}, {"Ids", "ids"}}, {{"Out", "out"}}, attrs);
}

/// Its grad op as the grad maker emits it: Out@GRAD = dout, W@GRAD = dw.
pe::proto::OpDesc lookup_grad(const std::string& type, const attr_list& attrs = {}) {
  return make_op(type + "_grad", {{"W", "w"}, {"Ids", "ids"}, {"Out@GRAD", "dout"}}, {{"W@GRAD", "dw"}}, attrs);
}

const std::vector<std::int64_t> id_values = {3, 0, 3, 4, 1, 0};

/// Out, dense W@GRAD and sparse W@GRAD of `type` with `ids` (the same six ids either way).
struct lookup_results {
  tensor out, dense_grad, sparse_grad;
};

lookup_results run_lookup(const std::string& type, const tensor& ids, const attr_list& attrs) {
  pe::scope vars;
  vars.var("w") = random_tensor({5, 3}, 11);
  vars.var("ids") = ids;
  run_op(lookup(type, attrs), vars);
  lookup_results r;
  r.out = vars.get("out").clone();
  vars.var("dout") = random_tensor(r.out.shape(), 12, -1.f, 1.f);
  run_op(lookup_grad(type, attrs), vars);
  r.dense_grad = vars.get("dw").clone();
  attr_list sparse = attrs;
  sparse.push_back({"is_sparse", true});
  run_op(lookup_grad(type, sparse), vars);
  r.sparse_grad = vars.get("dw").clone();
  return r;
}

TEST(LookupTableV1, GathersAndScattersAsV2OnTheSameIdsDroppingTheTrailingOne) {
  for (const std::int64_t padding_idx : {std::int64_t{-1}, std::int64_t{3}}) {
    SCOPED_TRACE("padding_idx " + std::to_string(padding_idx));
    const attr_list attrs = {{"padding_idx", padding_idx}};
    const auto v1 = run_lookup("lookup_table", tensor::from_vector(id_values, {2, 3, 1}), attrs);
    const auto v2 = run_lookup("lookup_table_v2", tensor::from_vector(id_values, {2, 3}), attrs);
    EXPECT_EQ(v1.out.shape(), (shape_t{2, 3, 3}));
    EXPECT_EQ(elements_of<float>(v1.out), elements_of<float>(v2.out));
    EXPECT_EQ(v1.dense_grad.shape(), (shape_t{5, 3}));
    EXPECT_EQ(elements_of<float>(v1.dense_grad), elements_of<float>(v2.dense_grad)); // bit for bit
    ASSERT_NE(v1.sparse_grad.sparse_rows(), nullptr);
    EXPECT_EQ(v1.sparse_grad.sparse_rows()->rows(), v2.sparse_grad.sparse_rows()->rows());
    EXPECT_EQ(elements_of<float>(v1.sparse_grad), elements_of<float>(v2.sparse_grad));
  }
  // Padding row 3 gives zeros and no gradient: a row per id but the two 3s.
  const auto padded = run_lookup("lookup_table", tensor::from_vector(id_values, {6, 1}), {{"padding_idx", std::int64_t{3}}});
  EXPECT_EQ(padded.sparse_grad.sparse_rows()->rows(), (std::vector<std::int64_t>{0, 4, 1, 0}));
  const auto out = elements_of<float>(padded.out);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(out[static_cast<std::size_t>(j)], 0.f);
}

TEST(LookupTableV1, InfersOutWithoutTheTrailingOneAndRefusesWhatPaddleRefuses) {
  const pe::var_table vars = {{"w", {pe::dtype::fp32, {10, 4}}},
                              {"ids", {pe::dtype::int64, {-1, 5, 1}}},
                              {"ids_flat", {pe::dtype::int64, {-1, 5}}},
                              {"ids32", {pe::dtype::int32, {-1, 1}}},
                              {"ids_unknown", {pe::dtype::int64, {-1, -1}}},
                              {"dout", {pe::dtype::fp32, {-1, 5, 4}}},
                              {"dout_v2", {pe::dtype::fp32, {-1, 5, 1, 4}}}};
  const auto op = [](const char* ids) {
    return make_op("lookup_table", {{"W", "w"}, {"Ids", ids}}, {{"Out", "out"}});
  };
  EXPECT_EQ(infer(op("ids"), vars).at("out").dims, (shape_t{-1, 5, 4}));
  EXPECT_EQ(infer(op("ids_unknown"), vars).at("out").dims, (shape_t{-1, 4}));
  std::string message = infer_error(op("ids_flat"), vars);
  EXPECT_TRUE(contains(message, "op #0 (lookup_table): lookup_table's Ids must end in a dim of 1 ([..., 1]), got "
                                "[-1, 5]"))
      << message;
  message = infer_error(op("ids32"), vars);
  EXPECT_TRUE(contains(message, "lookup_table's Ids must be INT64, got INT32")) << message;
  const auto grad = [](const char* dout) {
    return make_op("lookup_table_grad", {{"W", "w"}, {"Ids", "ids"}, {"Out@GRAD", dout}}, {{"W@GRAD", "dw"}});
  };
  EXPECT_EQ(infer(grad("dout"), vars).at("dw").dims, (shape_t{10, 4}));
  message = infer_error(grad("dout_v2"), vars);
  EXPECT_TRUE(contains(message, "Out@GRAD [-1, 5, 1, 4] does not match Out [-1, 5, 4] (Ids' dims but the last + [D])"))
      << message;

  // The kernels check the same.
  pe::scope scope;
  scope.var("w") = iota({5, 3});
  scope.var("ids") = tensor::from_vector<std::int64_t>({1, 2}, {2});
  message = error_of(lookup("lookup_table"), scope);
  EXPECT_TRUE(contains(message, "lookup_table: lookup_table's Ids must end in a dim of 1 ([..., 1]), got [2]")) << message;
  scope.var("ids") = tensor::from_vector<std::int32_t>({1, 2}, {2, 1});
  EXPECT_TRUE(contains(error_of(lookup("lookup_table"), scope), "lookup_table's Ids must be INT64, got INT32"));
  scope.var("ids") = tensor::from_vector<std::int64_t>({1, 5}, {2, 1});
  EXPECT_TRUE(contains(error_of(lookup("lookup_table"), scope), "lookup_table: Ids[1] = 5 is outside [0, 5)"));
}

TEST(LookupTableV1, GradMakerEmitsLookupTableGrad) {
  const pe::op_schema& schema = *pe::op_registry::global().find("lookup_table");
  const auto grads = schema.make_grad(lookup("lookup_table", {{"padding_idx", std::int64_t{2}}, {"is_sparse", true}}));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "lookup_table_grad");
  EXPECT_EQ(pe::input_args(grads[0], "Out@GRAD"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(pe::output_args(grads[0], "W@GRAD"), std::vector<std::string>{"w@GRAD"});
  EXPECT_EQ(pe::from_proto(*pe::find_attr(grads[0], "is_sparse")), pe::attribute(true));
}

/// A bag of 4 words: embedding (40 x 8, is_sparse) of ids [-1, 4(, 1)], fc to 3 classes,
/// softmax cross entropy, mean, Adam. `type` picks the lookup op; the seed is the same, so
/// both programs start from the same parameters.
struct bag_model {
  explicit bag_model(const std::string& type) {
    pe::program_builder b(main, startup, 5);
    const bool v1 = type == "lookup_table";
    const std::string ids = b.data("ids", v1 ? shape_t{-1, 4, 1} : shape_t{-1, 4}, pe::dtype::int64);
    const std::string label = b.data("label", {-1, 1}, pe::dtype::int64);
    w = b.parameter("emb.w", {40, 8}, pe::program_builder::init::xavier_uniform);
    b.append_op(type, {{"W", {w}}, {"Ids", {ids}}}, {{"Out", {"emb.out"}}}, {{"is_sparse", true}});
    const std::string logits = b.fc("emb.out", 3, "");
    loss = b.mean(b.softmax_with_cross_entropy(logits, label).second);
    pe::append_optimizer(b, {.kind = "adam", .learning_rate = 0.05f}, pe::append_backward(main, loss));
  }
  pe::proto::ProgramDesc main, startup;
  std::string w, loss;
};

std::vector<float> train(const std::string& type, int steps) {
  bag_model m(type);
  EXPECT_TRUE(pe::validate_program(m.main).at(pe::grad_name(m.w)).selected_rows);
  pe::parallel_executor exe({pe::place::cpu(0), pe::place::cpu(1)}, m.startup, m.main);
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> labels;
  for (int i = 0; i < 8; ++i) {
    for (int k = 0; k < 4; ++k) ids.push_back((7 * i + 3 * k) % 40);
    labels.push_back(i % 3);
  }
  const tensor id_tensor = tensor::from_vector(ids, type == "lookup_table" ? shape_t{8, 4, 1} : shape_t{8, 4});
  const pe::feed_map feeds{{"ids", id_tensor}, {"label", tensor::from_vector(labels, {8, 1})}};
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(exe.run(feeds, {m.loss}).at(0).values<float>()[0]);
  return losses;
}

TEST(LookupTableV1, ASparseModelTrainsOnTwoPlacesAsTheSameModelWithV2) {
  const auto v1 = train("lookup_table", 10), v2 = train("lookup_table_v2", 10);
  EXPECT_EQ(v1, v2);
  EXPECT_LT(v1.back(), v1.front()) << "the model does not learn: the comparison would prove little";
}

} // namespace

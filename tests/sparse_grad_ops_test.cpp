// SELECTED_ROWS gradients at the level of one op: the row index (core/selected_rows.hpp) and
// the tensors holding one, lookup_table_v2_grad with is_sparse (a row per id, padding_idx's
// left out), and sgd, momentum, adam (lazy_mode or not) and adamw reading one. The sparse
// updates are checked against the same op run on the dense gradient the rows add up to
// (repeats summed in order, as the dense lookup grad sums them): equal for every row the
// sparse kind updates, and the rows a lazy update skips unchanged. Adam's as Paddle's sparse
// kernel's: in place, its step reads the beta powers already advanced, and a row without
// gradient gets a zero-gradient step with an epsilon that is not bias-corrected.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/selected_rows.hpp"
#include "graph/exec/scope.hpp"
#include "tests/support/op_test.hpp"

namespace {

using namespace pe::testing;
using pe::selected_rows;
using pe::tensor;

constexpr std::int64_t height = 5, width = 3;

/// A SELECTED_ROWS value: row k of `values` ([rows.size(), width]) belongs to table row rows[k].
tensor sparse(std::vector<std::int64_t> rows, const std::vector<float>& v) {
  tensor t = tensor::from_vector(v, {static_cast<std::int64_t>(rows.size()), width});
  t.set_sparse_rows(std::make_shared<const selected_rows>(std::move(rows), height));
  return t;
}

/// The dense [height, width] gradient `s` stands for: zeros, then each entry added in order.
tensor densified(const tensor& s) {
  tensor d = tensor::zeros(pe::dtype::fp32, {height, width});
  const auto& rows = s.sparse_rows()->rows();
  for (std::size_t k = 0; k < rows.size(); ++k)
    for (std::int64_t j = 0; j < width; ++j)
      d.data<float>()[rows[k] * width + j] += s.data<float>()[static_cast<std::int64_t>(k) * width + j];
  return d;
}

/// Rows 3 and 1 (twice), unsorted, rows 0, 2 and 4 untouched.
tensor repeated_rows() {
  return sparse({3, 1, 1}, {0.5f, -0.25f, 1.f, 0.125f, 2.f, -1.5f, 0.75f, 0.5f, -0.5f});
}

std::vector<float> table(float scale) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < height * width; ++i) v.push_back(scale * static_cast<float>(i % 7) - 1.f);
  return v;
}

TEST(selected_rows, rows_outside_the_table_and_counts_that_disagree_are_refused) {
  expect_error([] { selected_rows({0, 4, 5}, 5, "emb@GRAD"); },
               {"emb@GRAD", "row 5 (entry 2)", "outside the table's rows [0, 5)"});
  expect_error([] { selected_rows({-1}, 5); }, {"row -1"});
  expect_error([] { selected_rows({}, -2); }, {"negative height -2"});
  tensor t(pe::dtype::fp32, {2, width});
  expect_error([&] { t.set_sparse_rows(std::make_shared<const selected_rows>(std::vector<std::int64_t>{1}, 5)); },
               {"1 rows for a value of shape [2, 3]"});
}

TEST(selected_rows, copies_share_the_index_and_resize_or_slice_make_a_tensor_dense) {
  const tensor s = repeated_rows();
  const tensor copy = s;
  EXPECT_EQ(copy.sparse_rows(), s.sparse_rows());
  EXPECT_EQ(s.clone().sparse_rows(), s.sparse_rows());
  tensor other;
  other.copy_from(s);
  EXPECT_EQ(other.sparse_rows()->rows(), (std::vector<std::int64_t>{3, 1, 1}));
  EXPECT_EQ(s.slice(0, 1).sparse_rows(), nullptr);
  other.resize(pe::dtype::fp32, {height, width});
  EXPECT_EQ(other.sparse_rows(), nullptr);
}

// --- lookup_table_v2_grad ---------------------------------------------------------------

pe::proto::OpDesc lookup_grad(bool is_sparse, std::int64_t padding_idx) {
  return make_op("lookup_table_v2_grad", {{"W", "w"}, {"Ids", "ids"}, {"Out@GRAD", "dout"}},
                 {{"W@GRAD", "dw"}}, {{"is_sparse", is_sparse}, {"padding_idx", padding_idx}});
}

pe::scope lookup_scope() {
  pe::scope vars;
  vars.var("w") = tensor::from_vector(table(0.5f), {height, width});
  vars.var("ids") = tensor::from_vector<std::int64_t>({4, 0, 4, 2}, {2, 2});
  vars.var("dout") = iota({2, 2, width});
  return vars;
}

TEST(sparse_lookup_grad, a_row_per_id_in_order_without_padding_idx) {
  pe::scope vars = lookup_scope();
  run_op(lookup_grad(true, 0), vars);
  const tensor& dw = vars.get("dw");
  ASSERT_NE(dw.sparse_rows(), nullptr);
  EXPECT_EQ(dw.sparse_rows()->rows(), (std::vector<std::int64_t>{4, 4, 2})); // id 0 is padding
  EXPECT_EQ(dw.sparse_rows()->height(), height);
  EXPECT_TRUE(tensor_is(dw, {3, width}, {0, 1, 2, 6, 7, 8, 9, 10, 11}));

  // Without padding every id has its row, and the rows add up to the dense gradient.
  run_op(lookup_grad(true, -1), vars);
  const tensor sparse_dw = vars.get("dw");
  EXPECT_EQ(sparse_dw.sparse_rows()->rows(), (std::vector<std::int64_t>{4, 0, 4, 2}));
  run_op(lookup_grad(false, -1), vars);
  EXPECT_EQ(vars.get("dw").sparse_rows(), nullptr);
  EXPECT_EQ(elements_of<float>(vars.get("dw")), elements_of<float>(densified(sparse_dw)));
}

TEST(sparse_lookup_grad, an_id_outside_the_table_is_refused_naming_it) {
  pe::scope vars = lookup_scope();
  vars.var("ids") = tensor::from_vector<std::int64_t>({4, 7, 1, 2}, {2, 2});
  EXPECT_TRUE(contains(error_of(lookup_grad(true, -1), vars), "Ids[1] = 7 is outside [0, 5)"));
}

// --- optimizers -------------------------------------------------------------------------

/// Runs `op` (Grad bound to "g") once with g = `grad` and once with its dense equivalent, from
/// the same state (`init`; the dense run's then changed by `dense_only`), and returns both
/// scopes.
template <class Init, class Tweak = void (*)(pe::scope&)>
std::pair<pe::scope, pe::scope> sparse_and_dense(const pe::proto::OpDesc& op, const tensor& grad, Init init,
                                                 Tweak dense_only = [](pe::scope&) {}) {
  std::pair<pe::scope, pe::scope> out;
  init(out.first);
  init(out.second);
  dense_only(out.second);
  out.first.var("g") = grad;
  out.second.var("g") = densified(grad);
  run_op(op, out.first);
  run_op(op, out.second);
  return out;
}

/// Row `r` of [height, width] `t`.
std::vector<float> row(const tensor& t, std::int64_t r) {
  auto v = t.values<float>();
  return {v.begin() + r * width, v.begin() + (r + 1) * width};
}

void common_state(pe::scope& vars) {
  vars.var("w") = tensor::from_vector(table(0.5f), {height, width});
  vars.var("lr") = tensor::from_vector<float>({0.1f}, {1});
}

TEST(sparse_optimizers, sgd_updates_the_rows_held_as_the_dense_gradient_does) {
  const auto op = make_op("sgd", {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}}, {{"ParamOut", "w"}});
  auto [s, d] = sparse_and_dense(op, repeated_rows(), common_state);
  EXPECT_EQ(elements_of<float>(s.get("w")), elements_of<float>(d.get("w")));
  // Out of place: the rows it does not hold are copied.
  const auto out_of_place = make_op("sgd", {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}}, {{"ParamOut", "w2"}});
  auto [s2, d2] = sparse_and_dense(out_of_place, repeated_rows(), common_state);
  EXPECT_EQ(elements_of<float>(s2.get("w2")), elements_of<float>(d2.get("w2")));
}

TEST(sparse_optimizers, momentum_updates_every_row_as_the_dense_gradient_does) {
  const auto op = make_op("momentum",
                          {{"Param", "w"}, {"Grad", "g"}, {"Velocity", "v"}, {"LearningRate", "lr"}},
                          {{"ParamOut", "w"}, {"VelocityOut", "v"}},
                          {{"mu", 0.9f}, {"use_nesterov", true}, {"regularization_method", std::string("l2_decay")},
                           {"regularization_coeff", 0.01f}});
  auto [s, d] = sparse_and_dense(op, repeated_rows(), [](pe::scope& vars) {
    common_state(vars);
    vars.var("v") = tensor::from_vector(table(0.25f), {height, width});
  });
  EXPECT_EQ(elements_of<float>(s.get("w")), elements_of<float>(d.get("w")));
  EXPECT_EQ(elements_of<float>(s.get("v")), elements_of<float>(d.get("v")));
}

pe::proto::OpDesc adam(const std::string& type, const attr_list& attrs) {
  return make_op(type,
                 {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}, {"Moment1", "m1"}, {"Moment2", "m2"},
                  {"Beta1Pow", "b1p"}, {"Beta2Pow", "b2p"}},
                 {{"ParamOut", "w"}, {"Moment1Out", "m1"}, {"Moment2Out", "m2"}, {"Beta1PowOut", "b1p"},
                  {"Beta2PowOut", "b2p"}},
                 attrs);
}

void adam_state(pe::scope& vars) {
  common_state(vars);
  vars.var("m1") = tensor::from_vector(table(0.125f), {height, width});
  std::vector<float> m2 = table(0.5f);
  for (float& x : m2) x = x * x + 0.01f;
  vars.var("m2") = tensor::from_vector(m2, {height, width});
  vars.var("b1p") = tensor::from_vector<float>({0.81f}, {1});
  vars.var("b2p") = tensor::from_vector<float>({0.998f}, {1});
}

constexpr float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;

/// The dense run's beta powers advanced by one step: Paddle's sparse kernel advances them in
/// place before its step reads them, so its bias correction is the dense one of the next step.
void advanced_pows(pe::scope& vars) {
  vars.var("b1p").data<float>()[0] *= beta1;
  vars.var("b2p").data<float>()[0] *= beta2;
}

TEST(sparse_optimizers, adam_without_lazy_mode_steps_every_row_as_paddles_sparse_kernel) {
  auto [s, d] = sparse_and_dense(adam("adam", {{"lazy_mode", false}}), repeated_rows(), adam_state, advanced_pows);
  pe::scope before;
  adam_state(before);
  // Held rows: the dense step with the advanced powers.
  for (const char* v : {"w", "m1", "m2"})
    for (std::int64_t r : {1, 3}) EXPECT_EQ(row(s.get(v), r), row(d.get(v), r)) << v << " row " << r;
  // The others: a zero-gradient step whose epsilon is not bias-corrected (Paddle's).
  const float b1p = 0.81f * beta1, b2p = 0.998f * beta2;
  const float lr_t = 0.1f * std::sqrt(1.f - b2p) / (1.f - b1p);
  for (std::int64_t r : {0, 2, 4})
    for (std::int64_t j = 0; j < width; ++j) {
      const std::int64_t i = r * width + j;
      const float m1 = beta1 * before.get("m1").data<float>()[i], m2 = beta2 * before.get("m2").data<float>()[i];
      EXPECT_EQ(s.get("m1").data<float>()[i], m1);
      EXPECT_EQ(s.get("m2").data<float>()[i], m2);
      EXPECT_FLOAT_EQ(s.get("w").data<float>()[i], before.get("w").data<float>()[i] - lr_t * m1 / (std::sqrt(m2) + epsilon));
    }
  // The powers advance once.
  EXPECT_EQ(s.get("b1p").data<float>()[0], 0.81f * beta1);
  EXPECT_EQ(s.get("b2p").data<float>()[0], 0.998f * beta2);
}

TEST(sparse_optimizers, lazy_adam_updates_the_rows_held_alone) {
  auto [s, d] = sparse_and_dense(adam("adam", {{"lazy_mode", true}}), repeated_rows(), adam_state, advanced_pows);
  pe::scope before;
  adam_state(before);
  for (const char* v : {"w", "m1", "m2"})
    for (std::int64_t r = 0; r < height; ++r) {
      const bool held = r == 1 || r == 3;
      EXPECT_EQ(row(s.get(v), r), row(held ? d.get(v) : before.get(v), r)) << v << " row " << r;
    }
}

TEST(sparse_optimizers, adam_out_of_place_reads_the_powers_it_was_given) {
  // Paddle's advanced powers come from writing in place; with other outputs the step's bias
  // correction is the dense one's, and every state is written.
  const auto op = make_op("adam",
                          {{"Param", "w"}, {"Grad", "g"}, {"LearningRate", "lr"}, {"Moment1", "m1"}, {"Moment2", "m2"},
                           {"Beta1Pow", "b1p"}, {"Beta2Pow", "b2p"}},
                          {{"ParamOut", "w2"}, {"Moment1Out", "m1o"}, {"Moment2Out", "m2o"}, {"Beta1PowOut", "b1o"},
                           {"Beta2PowOut", "b2o"}},
                          {{"lazy_mode", true}});
  auto [s, d] = sparse_and_dense(op, repeated_rows(), adam_state);
  pe::scope before;
  adam_state(before);
  for (const auto& [out, in] : {std::pair{"w2", "w"}, {"m1o", "m1"}, {"m2o", "m2"}})
    for (std::int64_t r = 0; r < height; ++r) {
      const bool held = r == 1 || r == 3;
      EXPECT_EQ(row(s.get(out), r), held ? row(d.get(out), r) : row(before.get(in), r)) << out << " row " << r;
    }
}

TEST(sparse_optimizers, adam_with_no_rows_changes_nothing_as_paddle_returns_early) {
  auto [s, d] = sparse_and_dense(adam("adam", {}), sparse({}, {}), adam_state);
  pe::scope before;
  adam_state(before);
  for (const char* v : {"w", "m1", "m2", "b1p", "b2p"})
    EXPECT_EQ(elements_of<float>(s.get(v)), elements_of<float>(before.get(v))) << v;
}

TEST(sparse_optimizers, adamw_decays_every_row_then_steps_as_adam) {
  const float coeff = 0.05f;
  auto [s, d] = sparse_and_dense(adam("adamw", {{"coeff", coeff}, {"with_decay", true}, {"lazy_mode", true}}),
                                 repeated_rows(), adam_state, advanced_pows);
  pe::scope before;
  adam_state(before);
  // Untouched rows: decayed only.
  for (std::int64_t r : {0, 2, 4}) {
    const auto w0 = row(before.get("w"), r);
    const auto w1 = row(s.get("w"), r);
    for (std::int64_t j = 0; j < width; ++j) EXPECT_EQ(w1[j], w0[j] * (1.f - 0.1f * coeff)) << r;
    EXPECT_EQ(row(s.get("m1"), r), row(before.get("m1"), r));
  }
  // Touched rows: the dense adamw's (decay, then Adam's step).
  for (std::int64_t r : {1, 3}) {
    const auto a = row(s.get("w"), r), b = row(d.get("w"), r);
    for (std::int64_t j = 0; j < width; ++j) EXPECT_NEAR(a[j], b[j], 1e-6f) << r;
  }
}

TEST(sparse_optimizers, a_gradient_of_rows_that_do_not_fit_param_is_refused_naming_both) {
  pe::scope vars;
  adam_state(vars);
  tensor narrow = tensor::from_vector<float>({1.f, 2.f}, {1, 2});
  narrow.set_sparse_rows(std::make_shared<const selected_rows>(std::vector<std::int64_t>{1}, height));
  vars.var("g") = narrow;
  const std::string message = error_of(adam("adam", {}), vars);
  EXPECT_TRUE(contains(message, "Grad is SELECTED_ROWS of FP32 [1, 2] in a table of 5 rows")) << message;
  EXPECT_TRUE(contains(message, "Param is FP32 [5, 3]")) << message;
  tensor tall = repeated_rows();
  tall.set_sparse_rows(std::make_shared<const selected_rows>(std::vector<std::int64_t>{3, 1, 7}, 9));
  vars.var("g") = tall;
  EXPECT_TRUE(contains(error_of(adam("adam", {}), vars), "in a table of 9 rows")) << message;
}

} // namespace

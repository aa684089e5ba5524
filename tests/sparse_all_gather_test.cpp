// The in-process all_gather of SELECTED_ROWS gradients: every place gets every place's rows
// and values in rank order, whatever each brought (a place may bring none), bit-identical
// run to run; ranks that disagree on the width or the table's height, or bring a dense
// buffer, fail on every rank with an error naming the rank; the cross-process backends
// refuse the call by name. The dense fallback (collective_call::exchange): every place gets
// each touched row once, ascending, with its sum over the ranks in rank order; auto takes it
// exactly when the gathered rows would move more bytes than the table, and says so in the
// collective's span.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "core/merged_rows.hpp"
#include "core/selected_rows.hpp"
#include "core/sparse_exchange.hpp"
#include "core/tensor.hpp"
#include "tests/support/collective_calls.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/inproc_world.hpp"

namespace {

using namespace pe;
using pe::testing::contains;
using pe::testing::inproc_world;
using pe::testing::test_call;

/// `rows` with values 100 * rank + k + j / 10 in a table of `height` rows of `width`.
tensor rows_of(int rank, std::vector<std::int64_t> rows, std::int64_t width = 2, std::int64_t height = 10) {
  tensor t(dtype::fp32, {static_cast<std::int64_t>(rows.size()), width});
  for (std::int64_t k = 0; k < t.dim(0); ++k)
    for (std::int64_t j = 0; j < width; ++j)
      t.data<float>()[k * width + j] = static_cast<float>(100 * rank + k) + static_cast<float>(j) / 10.f;
  t.set_sparse_rows(std::make_shared<const selected_rows>(std::move(rows), height));
  return t;
}

TEST(sparse_all_gather, every_place_gets_every_places_rows_in_rank_order) {
  inproc_world w(3);
  std::vector<tensor> grads = {rows_of(0, {7, 2, 7}), rows_of(1, {}), rows_of(2, {2, 9})};
  for (int r = 0; r < 3; ++r)
    w.comm.launch(test_call(collective_call::kind::all_gather, 0), r, {&grads[static_cast<std::size_t>(r)]}, w.on(r));
  const tensor expected_values = [] {
    tensor e(dtype::fp32, {5, 2});
    const float v[] = {0.f, .1f, 1.f, 1.1f, 2.f, 2.1f, 200.f, 200.1f, 201.f, 201.1f};
    std::copy(std::begin(v), std::end(v), e.data<float>());
    return e;
  }();
  for (int r = 0; r < 3; ++r) {
    const auto done = w.finished(r);
    ASSERT_TRUE(done.has_value()) << "rank " << r << " hangs";
    ASSERT_TRUE(*done) << w.error(r);
    const tensor& g = grads[static_cast<std::size_t>(r)];
    ASSERT_NE(g.sparse_rows(), nullptr);
    EXPECT_EQ(g.sparse_rows()->rows(), (std::vector<std::int64_t>{7, 2, 7, 2, 9})) << r;
    EXPECT_EQ(g.sparse_rows()->height(), 10);
    EXPECT_EQ(g.shape(), (shape_t{5, 2}));
    const auto got = g.values<float>(), want = expected_values.values<float>();
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << r;
  }
}

/// The error every rank's stream ends with when rank 1 brings `second` to a gather of
/// rank 0's rows_of(0, {1}).
std::vector<std::string> errors_with(tensor second) {
  inproc_world w(2);
  tensor first = rows_of(0, {1});
  w.comm.launch(test_call(collective_call::kind::all_gather, 0), 0, {&first}, w.on(0));
  w.comm.launch(test_call(collective_call::kind::all_gather, 0), 1, {&second}, w.on(1));
  std::vector<std::string> out;
  for (int r = 0; r < 2; ++r) {
    const auto done = w.finished(r);
    EXPECT_TRUE(done.has_value()) << "rank " << r << " hangs";
    EXPECT_FALSE(done.value_or(true));
    out.push_back(w.error(r));
  }
  return out;
}

TEST(sparse_all_gather, a_rank_whose_width_height_or_kind_disagrees_fails_every_rank_naming_it) {
  for (const auto& e : errors_with(rows_of(1, {3}, 3)))
    EXPECT_TRUE(contains(e, "test#0: rank 1's variable 0 has rows of width 3 in a table of 10 rows, rank 0's width 2")) << e;
  for (const auto& e : errors_with(rows_of(1, {3}, 2, 12)))
    EXPECT_TRUE(contains(e, "in a table of 12 rows, rank 0's width 2 and 10 rows")) << e;
  for (const auto& e : errors_with(tensor::zeros(dtype::fp32, {1, 2})))
    EXPECT_TRUE(contains(e, "rank 1's variable 0 is missing, not FP32 or not SELECTED_ROWS")) << e;
}

TEST(sparse_all_gather, reruns_are_bit_identical) {
  std::vector<float> first_run;
  for (int run = 0; run < 2; ++run) {
    inproc_world w(2);
    std::vector<tensor> grads = {rows_of(0, {4, 4, 1}), rows_of(1, {0, 4})};
    for (int r = 0; r < 2; ++r)
      w.comm.launch(test_call(collective_call::kind::all_gather, 0), r, {&grads[static_cast<std::size_t>(r)]}, w.on(r));
    for (int r = 0; r < 2; ++r) ASSERT_TRUE(w.finished(r).value_or(false)) << w.error(r);
    const auto v = grads[1].values<float>();
    if (run == 0) first_run.assign(v.begin(), v.end());
    else EXPECT_TRUE(std::equal(v.begin(), v.end(), first_run.begin(), first_run.end()));
  }
}

/// `grads` (one per rank) through an all_gather whose exchange is `mode`, in place; returns
/// whether the collective's span says it ran densely.
bool gather(std::vector<tensor>& grads, sparse_exchange mode) {
  inproc_world w(static_cast<int>(grads.size()));
  collective_call call = test_call(collective_call::kind::all_gather, 0);
  call.exchange = mode;
  std::optional<bool> dense;
  for (int r = 0; r < static_cast<int>(grads.size()); ++r)
    w.comm.launch(call, r, {&grads[static_cast<std::size_t>(r)]}, w.on(r),
                  [&dense](const collective_span& span, bool) { dense = span.dense_fallback; });
  for (int r = 0; r < static_cast<int>(grads.size()); ++r) {
    const auto done = w.finished(r);
    EXPECT_TRUE(done.has_value()) << "rank " << r << " hangs";
    EXPECT_TRUE(done.value_or(false)) << w.error(r);
  }
  EXPECT_TRUE(dense.has_value()) << "the completion never ran";
  return dense.value_or(false);
}

std::vector<float> values_of(const tensor& t) {
  const auto v = t.values<float>();
  return {v.begin(), v.end()};
}

TEST(sparse_all_gather, the_dense_fallback_gives_each_touched_row_once_with_its_sum_in_rank_order) {
  std::vector<tensor> grads = {rows_of(0, {7, 2, 7}), rows_of(1, {}), rows_of(2, {2, 9})};
  EXPECT_TRUE(gather(grads, sparse_exchange::dense));
  // Row 2: rank 0's entry 1 + rank 2's entry 0; row 7: rank 0's entries 0 and 2 (summed
  // first, as its own table holds them); row 9: rank 2's entry 1.
  const std::vector<float> expected = {1.f + 200.f, 1.1f + 200.1f, 0.f + 2.f, .1f + 2.1f, 201.f, 201.1f};
  for (int r = 0; r < 3; ++r) {
    const tensor& g = grads[static_cast<std::size_t>(r)];
    ASSERT_NE(g.sparse_rows(), nullptr);
    EXPECT_EQ(g.sparse_rows()->rows(), (std::vector<std::int64_t>{2, 7, 9})) << r;
    EXPECT_EQ(g.sparse_rows()->height(), 10);
    EXPECT_EQ(values_of(g), expected) << r;
  }
}

TEST(sparse_all_gather, auto_goes_dense_exactly_when_the_gathered_rows_would_move_more_bytes) {
  // A table of 4 rows of width 2: 4 x 3 floats = 48 bytes densely; a row gathered is 2
  // floats and its index, 16 bytes. 3 rows tie (gathered), 4 rows do not (dense).
  const auto run = [](std::vector<std::int64_t> first, std::vector<std::int64_t> second, sparse_exchange mode) {
    std::vector<tensor> grads = {rows_of(0, std::move(first), 2, 4), rows_of(1, std::move(second), 2, 4)};
    const bool dense = gather(grads, mode);
    return std::make_pair(dense, grads[1].sparse_rows()->rows());
  };
  EXPECT_EQ(sparse_exchange_bytes(3, 2), dense_exchange_bytes(4, 2));
  EXPECT_EQ(run({1, 1}, {3}, sparse_exchange::automatic), std::make_pair(false, std::vector<std::int64_t>{1, 1, 3}));
  EXPECT_EQ(run({1, 1}, {3, 0}, sparse_exchange::automatic), std::make_pair(true, std::vector<std::int64_t>{0, 1, 3}));
  // Forced either way, whatever the sizes.
  EXPECT_EQ(run({1, 1}, {3, 0}, sparse_exchange::sparse), std::make_pair(false, std::vector<std::int64_t>{1, 1, 3, 0}));
  EXPECT_EQ(run({1}, {}, sparse_exchange::dense), std::make_pair(true, std::vector<std::int64_t>{1}));
}

TEST(sparse_all_gather, dense_and_sparse_give_the_optimizer_the_same_sums_within_rounding) {
  std::vector<tensor> sparse = {rows_of(0, {4, 4, 1}), rows_of(1, {0, 4})}, dense = {sparse[0].clone(), sparse[1].clone()};
  gather(sparse, sparse_exchange::sparse);
  gather(dense, sparse_exchange::dense);
  const merged_rows a(sparse[0]), b(dense[0]);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a.row(k), b.row(k));
    for (std::int64_t j = 0; j < a.width(); ++j) EXPECT_NEAR(a.values(k)[j], b.values(k)[j], 1e-4) << k;
  }
}

TEST(sparse_all_gather, backends_without_it_refuse_it_by_name) {
  pe::testing::expect_error([] { expect_no_all_gather(test_call(collective_call::kind::all_gather, 3), "cross-process"); },
                            {"test#3", "in-process CPU backend only", "the cross-process backend does not run all_gather"});
  EXPECT_EQ(pe::testing::error_of([] { expect_no_all_gather(test_call(collective_call::kind::all_reduce, 3), "NCCL"); }), "");
}

} // namespace

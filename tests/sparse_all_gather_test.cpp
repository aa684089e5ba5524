// The in-process all_gather of SELECTED_ROWS gradients: every place gets every place's rows
// and values in rank order, whatever each brought (a place may bring none), bit-identical
// run to run; ranks that disagree on the width or the table's height, or bring a dense
// buffer, fail on every rank with an error naming the rank; the cross-process backends
// refuse the call by name.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "core/selected_rows.hpp"
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

TEST(sparse_all_gather, backends_without_it_refuse_it_by_name) {
  pe::testing::expect_error([] { expect_no_all_gather(test_call(collective_call::kind::all_gather, 3), "cross-process"); },
                            {"test#3", "in-process CPU backend only", "the cross-process backend does not run all_gather"});
  EXPECT_EQ(pe::testing::error_of([] { expect_no_all_gather(test_call(collective_call::kind::all_reduce, 3), "NCCL"); }), "");
}

} // namespace

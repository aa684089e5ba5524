// merged_rows: distinct rows ascending, each summed in the order its entries appear, for
// small gradients (stable_sort) and large ones (the radix sort of (row, position) keys),
// bit for bit against a plain reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "core/merged_rows.hpp"
#include "core/selected_rows.hpp"

namespace pe {
namespace {

/// `n` entries of width 3 with rows drawn from [0, height), values from the seed.
tensor random_rows(std::size_t n, std::int64_t height, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<std::int64_t> row(0, height - 1);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  std::vector<std::int64_t> rows(n);
  std::vector<float> values(n * 3);
  for (auto& r : rows) r = row(gen);
  for (auto& v : values) v = value(gen);
  tensor t = tensor::from_vector(values, {static_cast<std::int64_t>(n), 3});
  t.set_sparse_rows(std::make_shared<const selected_rows>(std::move(rows), height));
  return t;
}

/// Each distinct row's sum, accumulated in the order the entries appear.
std::map<std::int64_t, std::vector<float>> reference(const tensor& t) {
  std::map<std::int64_t, std::vector<float>> sums;
  const auto& rows = t.sparse_rows()->rows();
  const float* v = t.data<float>();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto [it, fresh] = sums.try_emplace(rows[i], v + 3 * i, v + 3 * i + 3);
    if (!fresh)
      for (int j = 0; j < 3; ++j) it->second[static_cast<std::size_t>(j)] += v[3 * i + static_cast<std::size_t>(j)];
  }
  return sums;
}

void expect_merged_as_reference(const tensor& t) {
  const merged_rows m(t);
  const auto want = reference(t);
  ASSERT_EQ(m.size(), want.size());
  std::size_t k = 0;
  for (const auto& [row, sum] : want) {
    EXPECT_EQ(m.row(k), row) << "distinct row " << k;
    for (int j = 0; j < 3; ++j) EXPECT_EQ(m.values(k)[j], sum[static_cast<std::size_t>(j)]) << "row " << row;
    ++k;
  }
}

TEST(merged_rows, a_small_gradient_sums_repeats_in_order) {
  expect_merged_as_reference(random_rows(300, 40, 1)); // many repeats
  expect_merged_as_reference(random_rows(1, 40, 2));
  expect_merged_as_reference(random_rows(0, 40, 3));
}

TEST(merged_rows, a_large_gradient_gives_what_the_stable_order_gives) {
  expect_merged_as_reference(random_rows(10'240, 1'000'000, 4)); // an embedding's: few repeats
  expect_merged_as_reference(random_rows(5'000, 300, 5));        // every row repeated
  expect_merged_as_reference(random_rows(4'096, 1, 6));          // one row, 4,096 times
}

} // namespace
} // namespace pe

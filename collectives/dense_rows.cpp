#include "collectives/dense_rows.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/merged_rows.hpp"
#include "core/selected_rows.hpp"

namespace pe {

tensor dense_rows_table(std::int64_t height, std::int64_t width, place where) {
  tensor table(dtype::fp32, {height, width + 1}, where);
  std::fill_n(table.data<float>(), table.numel(), 0.f);
  return table;
}

void add_rows_densely(const tensor& sparse, tensor& table) {
  const merged_rows merged(sparse);
  const std::int64_t stride = table.dim(1);
  if (merged.width() + 1 != stride || merged.height() != table.dim(0))
    throw error("add_rows_densely: rows of width " + std::to_string(merged.width()) + " in a table of " +
                std::to_string(merged.height()) + " rows do not fit a table of " + to_string(table.shape()));
  float* t = table.data<float>();
  for (std::size_t k = 0; k < merged.size(); ++k) {
    float* row = t + merged.row(k) * stride;
    const float* add = merged.values(k);
    for (std::int64_t j = 0; j < merged.width(); ++j) row[j] += add[j];
    row[merged.width()] += 1.f;
  }
}

tensor touched_rows(const tensor& table, place where) {
  const std::int64_t height = table.dim(0), stride = table.dim(1), width = stride - 1;
  const float* t = table.data<float>();
  std::vector<std::int64_t> rows;
  for (std::int64_t r = 0; r < height; ++r)
    if (t[r * stride + width] > 0.f) rows.push_back(r);
  tensor out(dtype::fp32, {static_cast<std::int64_t>(rows.size()), width}, where);
  float* to = out.data<float>();
  for (std::size_t k = 0; k < rows.size(); ++k)
    std::copy_n(t + rows[k] * stride, width, to + static_cast<std::int64_t>(k) * width);
  out.set_sparse_rows(std::make_shared<const selected_rows>(std::move(rows), height));
  return out;
}

} // namespace pe

#include "core/merged_rows.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "core/selected_rows.hpp"

namespace pe {

merged_rows::merged_rows(const tensor& sparse) {
  const auto& index = sparse.sparse_rows();
  if (!index || sparse.rank() != 2) throw error("merged_rows: not a SELECTED_ROWS value");
  const std::vector<std::int64_t>& rows = index->rows();
  width_ = sparse.dim(1);
  height_ = index->height();
  // Entries ordered by row, equal rows in the order they appear (stable).
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows[a] < rows[b]; });
  const float* from = sparse.data<float>();
  for (std::size_t e : order) {
    const float* add = from + static_cast<std::int64_t>(e) * width_;
    if (rows_.empty() || rows_.back() != rows[e]) {
      rows_.push_back(rows[e]);
      values_.insert(values_.end(), add, add + width_);
      continue;
    }
    float* sum = values_.data() + static_cast<std::int64_t>(rows_.size() - 1) * width_;
    for (std::int64_t j = 0; j < width_; ++j) sum[j] += add[j];
  }
}

} // namespace pe

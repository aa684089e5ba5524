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
  auto entry = [&](std::size_t e) { return from + static_cast<std::int64_t>(e) * width_; };
  std::vector<std::size_t> summed; // the k of each repeated row, its sum's place in sums_
  for (std::size_t i = 0; i < order.size();) {
    std::size_t end = i + 1;
    while (end < order.size() && rows[order[end]] == rows[order[i]]) ++end;
    rows_.push_back(rows[order[i]]);
    if (end == i + 1) {
      values_.push_back(entry(order[i]));
    } else {
      // Summed in the order the entries appear (the stable sort kept it).
      const std::size_t at = sums_.size();
      sums_.insert(sums_.end(), entry(order[i]), entry(order[i]) + width_);
      for (std::size_t k = i + 1; k < end; ++k) {
        const float* add = entry(order[k]);
        for (std::int64_t j = 0; j < width_; ++j) sums_[at + static_cast<std::size_t>(j)] += add[j];
      }
      summed.push_back(values_.size());
      values_.push_back(nullptr); // set below, once sums_ no longer moves
    }
    i = end;
  }
  for (std::size_t r = 0; r < summed.size(); ++r)
    values_[summed[r]] = sums_.data() + r * static_cast<std::size_t>(width_);
}

} // namespace pe

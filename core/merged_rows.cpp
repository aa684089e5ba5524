#include "core/merged_rows.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "core/error.hpp"
#include "core/selected_rows.hpp"

namespace pe {

namespace {

/// Bits needed to write `v`.
int bit_width(std::uint64_t v) {
  int bits = 0;
  for (; v != 0; v >>= 1) ++bits;
  return bits;
}

/// The entries' positions ordered by row, equal rows in the order they appear.
///
/// Rows of a large gradient (10,240 ids over a 1M-row table) are sorted as keys (row, position)
/// by an LSD radix sort, 11 bits a pass: 138 us against stable_sort's 537 us with an indirect
/// comparison on the development VM; a key holds its position, so equal rows keep their order
/// and the result is stable_sort's. Small gradients, and rows that do not fit a key (negative,
/// or too wide with the positions), take stable_sort.
std::vector<std::size_t> order_by_row(const std::vector<std::int64_t>& rows) {
  const std::size_t n = rows.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  bool radix = n >= 1024;
  int position_bits = 0, row_bits = 0;
  if (radix) {
    const auto [lowest, highest] = std::minmax_element(rows.begin(), rows.end());
    position_bits = bit_width(n - 1);
    row_bits = bit_width(static_cast<std::uint64_t>(*highest));
    radix = *lowest >= 0 && row_bits + position_bits <= 64;
  }
  if (!radix) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows[a] < rows[b]; });
    return order;
  }
  constexpr int digit_bits = 11;
  constexpr std::size_t digits = std::size_t{1} << digit_bits;
  std::vector<std::uint64_t> keys(n), spare(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<std::uint64_t>(rows[i]) << position_bits | i;
  for (int shift = 0; shift < row_bits + position_bits; shift += digit_bits) {
    std::vector<std::size_t> start(digits + 1, 0);
    for (std::uint64_t k : keys) ++start[((k >> shift) & (digits - 1)) + 1];
    for (std::size_t d = 0; d < digits; ++d) start[d + 1] += start[d];
    for (std::uint64_t k : keys) spare[start[(k >> shift) & (digits - 1)]++] = k;
    keys.swap(spare);
  }
  const std::uint64_t position_mask = (std::uint64_t{1} << position_bits) - 1;
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::size_t>(keys[i] & position_mask);
  return order;
}

} // namespace

merged_rows::merged_rows(const tensor& sparse) {
  const auto& index = sparse.sparse_rows();
  if (!index || sparse.rank() != 2) throw error("merged_rows: not a SELECTED_ROWS value");
  const std::vector<std::int64_t>& rows = index->rows();
  width_ = sparse.dim(1);
  height_ = index->height();
  // Entries ordered by row, equal rows in the order they appear (stable).
  const std::vector<std::size_t> order = order_by_row(rows);
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

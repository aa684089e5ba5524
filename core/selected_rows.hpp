#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace pe {

/// The row index of a SELECTED_ROWS variable (Paddle's SelectedRows less its value): the
/// rows of a table of `height` rows that a [rows().size(), width] value holds, in the order
/// the value holds them. Rows may repeat (an embedding's gradient has one per looked-up id);
/// a repeated row's values add up. A tensor holding such a value points at its index
/// (tensor::sparse_rows); the index is immutable, so tensors share it when copied.
class selected_rows {
 public:
  /// Throws pe::error naming `what` (a variable, a peer) and the first row outside
  /// [0, height), or a negative height.
  selected_rows(std::vector<std::int64_t> rows, std::int64_t height, const std::string& what = "SELECTED_ROWS");

  const std::vector<std::int64_t>& rows() const { return rows_; }
  std::int64_t height() const { return height_; }

 private:
  std::vector<std::int64_t> rows_;
  std::int64_t height_;
};

/// `parts`, SELECTED_ROWS values of one table (the same width and height: the caller has
/// checked), concatenated in order on `where`: their rows one after another, and their values
/// likewise. What an all_gather makes of every rank's rows.
tensor concat_selected_rows(const std::vector<const tensor*>& parts, place where);

} // namespace pe

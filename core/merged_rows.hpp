#pragma once
// A SELECTED_ROWS gradient with its repeated rows summed, what the CPU optimizer kernels
// update from (as Paddle's sparse kernels merge first, with its MergeAdd).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.hpp"

namespace pe {

/// The distinct rows of a SELECTED_ROWS value, ascending, each with the sum of its values
/// taken in the order they appear. After an all_gather that order is rank order, then the
/// order of the ids on each rank: the global batch's order, so the sums are the same on
/// every place and in every run, and those of one place fed the whole batch.
class merged_rows {
 public:
  /// `sparse` must hold a SELECTED_ROWS value (tensor::sparse_rows), FP32 [rows, width], and
  /// outlive this: a row that appears once is read where it is, not copied (an embedding's
  /// gathered gradient has thousands of rows, nearly all distinct, merged every step).
  explicit merged_rows(const tensor& sparse);

  std::size_t size() const { return rows_.size(); }
  std::int64_t width() const { return width_; }
  std::int64_t height() const { return height_; }
  std::int64_t row(std::size_t k) const { return rows_[k]; }
  /// The summed values of the k-th distinct row (width() of them).
  const float* values(std::size_t k) const { return values_[k]; }

 private:
  std::vector<std::int64_t> rows_;
  std::vector<const float*> values_; // in `sparse` for a row that appears once, else in sums_
  std::vector<float> sums_;          // the repeated rows' sums, in row order
  std::int64_t width_ = 0;
  std::int64_t height_ = 0;
};

} // namespace pe

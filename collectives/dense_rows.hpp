#pragma once
// The dense fallback of a SELECTED_ROWS gradient's collective (core/sparse_exchange.hpp): each
// rank adds its rows into a table of the gradient's height, the tables are all-reduced, and
// the touched rows come out as SELECTED_ROWS again, each once with its sum. The optimizers
// then see the same rows as after a gather (lazy Adam still updates only the touched rows),
// with the same sums up to the grouping of the FP32 additions (each rank's own rows first).
#include <cstdint>

#include "core/tensor.hpp"

namespace pe {

/// A zero table for a SELECTED_ROWS value of `height` rows of `width`: FP32 [height, width + 1],
/// the last column counting the parts that touched each row.
tensor dense_rows_table(std::int64_t height, std::int64_t width, place where);

/// Adds `sparse` (a SELECTED_ROWS value of the table's height and width) into `table`: its
/// repeated rows summed first in the order they appear (merged_rows), then each sum added to
/// its row, and 1 to the row's count. Parts added in rank order give each element p0 + p1 +
/// ..., what a dense all-reduce of the ranks' own tables gives, bit for bit.
void add_rows_densely(const tensor& sparse, tensor& table);

/// The rows of `table` some part touched (count > 0), ascending, with their values: a
/// SELECTED_ROWS value of the table's height on `where`.
tensor touched_rows(const tensor& table, place where);

} // namespace pe

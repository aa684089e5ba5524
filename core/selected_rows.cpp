#include "core/selected_rows.hpp"

#include <cstring>
#include <memory>
#include <utility>

#include "core/error.hpp"

namespace pe {

selected_rows::selected_rows(std::vector<std::int64_t> rows, std::int64_t height, const std::string& what)
    : rows_(std::move(rows)), height_(height) {
  if (height_ < 0) throw error(what + ": negative height " + std::to_string(height_));
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i] < 0 || rows_[i] >= height_)
      throw error(what + ": row " + std::to_string(rows_[i]) + " (entry " + std::to_string(i) +
                  ") is outside the table's rows [0, " + std::to_string(height_) + ")");
}

tensor concat_selected_rows(const std::vector<const tensor*>& parts, place where) {
  if (parts.empty()) throw error("concat_selected_rows: no parts");
  std::vector<std::int64_t> rows;
  for (const tensor* part : parts) {
    const auto& mine = part->sparse_rows()->rows();
    rows.insert(rows.end(), mine.begin(), mine.end());
  }
  const tensor& first = *parts.front();
  tensor out(dtype::fp32, {static_cast<std::int64_t>(rows.size()), first.dim(1)}, where);
  auto* to = static_cast<std::byte*>(out.raw());
  for (const tensor* part : parts) {
    std::memcpy(to, part->raw(), part->bytes());
    to += part->bytes();
  }
  // Every row was checked against the same height in its own part.
  out.set_sparse_rows(std::make_shared<const selected_rows>(std::move(rows), first.sparse_rows()->height()));
  return out;
}

} // namespace pe

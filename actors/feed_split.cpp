#include "actors/feed_split.hpp"

#include <algorithm>
#include <cstring>

namespace pe {

namespace {

/// The ranks' values stacked along dim 0 (scalars count as one row each).
tensor concat_rows(const std::vector<tensor>& values, const std::string& name) {
  auto rows_of = [](const tensor& v) { return v.rank() == 0 ? std::int64_t{1} : v.dim(0); };
  shape_t shape = values[0].rank() == 0 ? shape_t{0} : values[0].shape();
  shape[0] = 0;
  for (const auto& v : values) {
    shape_t tail(v.shape().begin() + (v.rank() == 0 ? 0 : 1), v.shape().end());
    if (v.type() != values[0].type() || !std::equal(tail.begin(), tail.end(), shape.begin() + 1, shape.end()))
      throw error("fetch '" + name + "': places disagree on dtype or trailing dims (" +
                  to_string(v.shape()) + " vs " + to_string(values[0].shape()) + ")");
    shape[0] += rows_of(v);
  }
  tensor out(values[0].type(), shape);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (const auto& v : values) {
    std::memcpy(dst, v.raw(), v.bytes());
    dst += v.bytes();
  }
  return out;
}

} // namespace

std::int64_t batch_size(const feed_map& feeds) {
  std::int64_t batch = -1;
  std::string batch_from;
  for (const auto& [name, value] : feeds) {
    if (value.rank() == 0) throw error("feed '" + name + "' is a scalar; feeds are split along dim 0");
    if (batch >= 0 && value.dim(0) != batch)
      throw error("feeds '" + batch_from + "' and '" + name + "' have different batch sizes (" +
                  std::to_string(batch) + " vs " + std::to_string(value.dim(0)) + ")");
    batch = value.dim(0);
    batch_from = name;
  }
  if (batch == 0) throw error("the feeds hold an empty batch");
  return std::max<std::int64_t>(batch, 0);
}

std::vector<std::int64_t> split_rows(std::int64_t batch, int world_size) {
  const auto n = static_cast<std::int64_t>(world_size);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(world_size), 0);
  for (std::int64_t r = 0; r < n; ++r) rows[static_cast<std::size_t>(r)] = batch / n + (r < batch % n ? 1 : 0);
  return rows;
}

std::vector<float> loss_scales(const std::vector<std::int64_t>& rows, build_strategy::gradient_scale scale) {
  std::vector<float> scales;
  if (scale == build_strategy::gradient_scale::customized) return scales;
  std::int64_t batch = 0;
  for (auto n : rows) batch += n;
  for (auto n : rows)
    scales.push_back(scale == build_strategy::gradient_scale::one
                         ? 1.f
                         : static_cast<float>(n) / static_cast<float>(std::max<std::int64_t>(batch, 1)));
  return scales;
}

tensor merge_fetch(const std::vector<tensor>& values, const std::string& name,
                   const shape_t& declared_dims, const std::vector<std::int64_t>& rows) {
  if (values.size() == 1) return values[0];
  const bool batch_dependent =
      std::find(declared_dims.begin(), declared_dims.end(), -1) != declared_dims.end();
  if (batch_dependent || values[0].numel() != 1 || values[0].type() != dtype::fp32)
    return concat_rows(values, name);
  std::int64_t batch = 0;
  for (auto n : rows) batch += n;
  tensor out(dtype::fp32, values[0].shape());
  double sum = 0;
  for (std::size_t r = 0; r < values.size(); ++r)
    if (rows[r] > 0)
      sum += static_cast<double>(rows[r]) / static_cast<double>(batch) * values[r].data<float>()[0];
  out.data<float>()[0] = static_cast<float>(sum);
  return out;
}

} // namespace pe

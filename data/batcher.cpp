#include "data/batcher.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.hpp"

namespace pe {

namespace {

/// Copies row `from` of `source` into row `to` of `target` (same row width and dtype).
void copy_row(const tensor& source, std::int64_t from, tensor& target, std::int64_t to) {
  auto row_bytes = source.bytes() / static_cast<std::size_t>(source.dim(0));
  std::memcpy(static_cast<std::byte*>(target.raw()) + to * row_bytes,
              static_cast<const std::byte*>(source.raw()) + from * row_bytes, row_bytes);
}

/// `shape` with dim 0 set to `rows`.
shape_t with_rows(shape_t shape, std::int64_t rows) {
  shape[0] = rows;
  return shape;
}

} // namespace

batcher::batcher(const dataset& data, std::int64_t batch_size, std::uint64_t seed, bool shuffled)
  : data_(data),
    batch_size_(batch_size),
    shuffle_(shuffled),
    rng_(seed),
    order_(static_cast<std::size_t>(data.size())) {
  if (batch_size <= 0)
    throw error("batch size must be positive, got " + std::to_string(batch_size));
  std::iota(order_.begin(), order_.end(), std::int64_t{0});
  shuffle();
}

dataset batcher::next() {
  return next(0, next_rows());
}

std::int64_t batcher::next_rows() const {
  const std::int64_t left = position_ == data_.size() ? data_.size() : data_.size() - position_;
  return std::min(batch_size_, left);
}

dataset batcher::next(std::int64_t first, std::int64_t count) {
  batch_copy rows = take(first, count);
  rows.copy_all();
  return std::move(rows.rows());
}

batch_copy batcher::take(std::int64_t first, std::int64_t count) {
  const std::int64_t batch = next_rows();
  if (first < 0 || count < 0 || first + count > batch)
    throw error("batcher: rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                ") of a batch of " + std::to_string(batch));
  const auto begin = order_.begin() + take_batch() + first;
  return batch_copy(data_, std::vector<std::int64_t>(begin, begin + count));
}

batch_copy::batch_copy(const dataset& source, std::vector<std::int64_t> rows)
    : source_(source), rows_(std::move(rows)) {
  const auto count = static_cast<std::int64_t>(rows_.size());
  std::vector<data_feed> feeds;
  std::size_t bytes = 0;
  for (const auto& f : source.feeds()) {
    targets_.emplace_back(f.rows.type(), with_rows(f.rows.shape(), count));
    feeds.push_back({f.name, targets_.back()});
    bytes += targets_.back().bytes();
  }
  target_ = dataset(std::move(feeds));
  // Pieces of ~64 KiB: a device thread that takes one in an idle moment is back at its
  // streams within microseconds (devices/idle_work.hpp).
  constexpr std::size_t piece_bytes = 64 * 1024;
  pieces_ = static_cast<int>(std::clamp<std::size_t>(bytes / piece_bytes, 1, std::max<std::size_t>(rows_.size(), 1)));
}

void batch_copy::copy_all() {
  for (int k = 0; k < pieces_; ++k) copy(k);
}

void batch_copy::copy(int piece) {
  if (piece < 0 || piece >= pieces_)
    throw error("batch_copy: piece " + std::to_string(piece) + " of " + std::to_string(pieces_));
  const auto count = static_cast<std::int64_t>(rows_.size());
  const std::int64_t begin = count * piece / pieces_, end = count * (piece + 1) / pieces_;
  for (std::size_t f = 0; f < source_.feeds().size(); ++f) {
    const tensor& from = source_.feeds()[f].rows;
    tensor& to = targets_[f];
    for (std::int64_t i = begin; i < end; ++i) copy_row(from, rows_[static_cast<std::size_t>(i)], to, i);
  }
}

void batcher::advance(std::int64_t batches) {
  for (std::int64_t i = 0; i < batches; ++i)
    take_batch();
}

std::int64_t batcher::take_batch() {
  if (position_ == data_.size()) {
    shuffle();
    position_ = 0;
  }
  auto begin = position_;
  position_ += std::min(batch_size_, data_.size() - position_);
  ++served_;
  return begin;
}

std::int64_t batcher::batches_per_epoch() const {
  return (data_.size() + batch_size_ - 1) / batch_size_;
}

void batcher::shuffle() {
  if (!shuffle_) return;
  std::shuffle(order_.begin(), order_.end(), rng_);
}

} // namespace pe

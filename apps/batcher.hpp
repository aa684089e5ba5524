#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "apps/dataset.hpp"

namespace pe {

/// Serves training mini-batches: sequential over a seeded shuffle of the samples, shuffled
/// afresh every epoch. The last batch of an epoch holds the remainder (it is not dropped),
/// so an epoch is ceil(size / batch_size) batches and visits every sample once.
class batcher {
 public:
  /// Keeps a reference to `data`, which must outlive the batcher.
  batcher(const dataset& data, std::int64_t batch_size, std::uint64_t seed);

  /// The next batch: copies of its samples, images and labels with b rows of the data set's
  /// row shapes.
  dataset next();

  std::int64_t batches_per_epoch() const;

 private:
  void shuffle();

  const dataset& data_;
  std::int64_t batch_size_;
  std::mt19937_64 rng_;
  std::vector<std::int64_t> order_;
  std::int64_t position_ = 0; ///< next index into order_
};

} // namespace pe

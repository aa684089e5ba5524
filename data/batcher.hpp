#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "data/dataset.hpp"

namespace pe {

/// Rows of a batch taken from a data set but not yet copied (batcher::take): the target
/// tensors exist; copy() fills them, in pieces that several threads may copy at once.
class batch_copy {
 public:
  batch_copy(const dataset& source, std::vector<std::int64_t> rows);

  /// How many pieces the copy is cut into: about 64 KiB of rows each, at least one.
  int pieces() const { return pieces_; }

  /// Copies piece `piece` of pieces(): its rows of every feed. Each piece once, in any
  /// order, on any thread; the batch is whole once every piece has been copied.
  void copy(int piece);

  /// Copies every piece on the calling thread.
  void copy_all();

  /// The batch (whole once every piece was copied).
  dataset& rows() { return target_; }

 private:
  const dataset& source_;
  std::vector<std::int64_t> rows_; ///< the source row of each target row
  std::vector<tensor> targets_;    ///< per feed, sharing target_'s storage: what copy() writes
  dataset target_;
  int pieces_ = 1;
};

/// Serves training mini-batches: sequential over a seeded shuffle of the samples, shuffled
/// afresh every epoch (or, without shuffling, in the data set's order every epoch). The last
/// batch of an epoch holds the remainder (it is not dropped),
/// so an epoch is ceil(size / batch_size) batches and visits every sample once.
class batcher {
 public:
  /// Keeps a reference to `data`, which must outlive the batcher. Without `shuffled`, every
  /// epoch serves the samples in their order in `data` (what a Paddle program fed one array
  /// sees: place p gets the p-th contiguous rows of each batch).
  batcher(const dataset& data, std::int64_t batch_size, std::uint64_t seed, bool shuffled = true);

  /// The next batch: copies of its samples, every feed with b rows of its row shape in the
  /// data set (the same samples in the same order in every feed).
  dataset next();

  /// The rows the next batch has: the batch size, or the rest of the epoch.
  std::int64_t next_rows() const;

  /// Rows [first, first + count) of the next batch only (a process's share of a global
  /// batch: it copies nothing else), moving past the whole batch as `next` does.
  dataset next(std::int64_t first, std::int64_t count);

  /// What next(first, count) serves, its rows still to be copied (batch_copy::copy), so that
  /// the copy can be cut up and overlap a step.
  batch_copy take(std::int64_t first, std::int64_t count);

  /// Skips `batches` batches as `next` would serve them, shuffling at the same epoch
  /// boundaries, without copying samples: a batcher made with the same data, batch size and
  /// seed and advanced by k serves what the k+1-th `next` of a fresh one serves (resuming
  /// from a checkpoint).
  void advance(std::int64_t batches);

  /// Batches served (or skipped) so far.
  std::int64_t served() const { return served_; }

  std::int64_t batches_per_epoch() const;

 private:
  void shuffle();
  /// Moves past the next batch; returns the index into order_ of its first sample.
  std::int64_t take_batch();

  const dataset& data_;
  std::int64_t batch_size_;
  bool shuffle_;
  std::mt19937_64 rng_;
  std::vector<std::int64_t> order_;
  std::int64_t position_ = 0; ///< next index into order_
  std::int64_t served_ = 0;
};

} // namespace pe

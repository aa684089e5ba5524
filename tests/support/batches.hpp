#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.hpp"
#include "graph/exec/feed_check.hpp"
#include "graph/models/mlp.hpp"

namespace pe::testing {

/// A learnable classification batch: `n` rows of `width` features uniform in [-1, 1], whose
/// label is the index of the largest of the first `classes` features (a linear layer can
/// learn it). The same seed gives the same batch.
struct labelled_batch {
  tensor image; ///< FP32 [n, width]
  tensor label; ///< INT64 [n, 1]
};
labelled_batch argmax_batch(std::int64_t n, std::int64_t width, std::int64_t classes,
                            std::uint64_t seed);

/// The MLP the executor tests train on that task: 16 features, hidden layers of 24 and 12,
/// 4 classes; `optimizer` with `learning_rate`, parameters initialized from `seed`.
model_programs argmax_mlp(const std::string& optimizer, float learning_rate,
                          std::uint64_t seed = 11);

/// argmax_batch(n, 16, 4, seed) as argmax_mlp's image and label feeds.
feed_map argmax_feed(const model_programs& m, std::int64_t n, std::uint64_t seed);

/// Rows [first, first + count) of every feed: one process's share of a global batch.
feed_map rows_of(const feed_map& feeds, std::int64_t first, std::int64_t count);

/// The built-in CNN's layers at a size the reference executor runs quickly: 8x8 images,
/// conv channels 4 and 8, fc 16, 4 classes, momentum, parameters from seed 5.
model_programs small_cnn();

/// 16 images of small_cnn's side whose label is argmax_batch's (the first 4 pixels).
feed_map small_cnn_feed(const model_programs& m, std::uint64_t seed);

} // namespace pe::testing

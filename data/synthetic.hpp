#pragma once

#include <cstdint>

#include "data/dataset.hpp"

namespace pe {

/// A fixed, learnable classification problem: `classes` gaussian prototype vectors, and
/// samples that are a prototype (the label) plus gaussian noise. Everything follows from
/// `seed`, so runs with the same seed see the same data.
struct synthetic_config {
  std::uint64_t seed = 1;
  std::int64_t width = 784;
  std::int64_t classes = 10;
  std::int64_t train_size = 8192;
  std::int64_t test_size = 2048;
  float prototype_scale = 0.1f; ///< standard deviation of the prototypes' elements
  float noise = 1.0f;           ///< standard deviation of the per-sample noise
};

/// Training and test sets drawn around the same prototypes, each the feeds image_feed (FP32
/// [n, width]) and label_feed (INT64 [n, 1]).
data_splits make_synthetic(const synthetic_config& config);

} // namespace pe

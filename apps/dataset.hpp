#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "devices/tensor.hpp"

namespace pe {

/// A labelled data set in memory: `images` FP32 [n, width], `labels` INT64 [n, 1], the
/// shapes the models' image and label feeds take.
struct dataset {
  tensor images;
  tensor labels;

  std::int64_t size() const { return images.dim(0); }
  std::int64_t width() const { return images.dim(1); }

  /// Samples [begin, end), sharing this data set's storage.
  dataset slice(std::int64_t begin, std::int64_t end) const {
    return {images.slice(begin, end), labels.slice(begin, end)};
  }
};

/// A training set and, where the source has one, a test set.
struct data_splits {
  dataset train;
  std::optional<dataset> test;
};

/// Loads `spec`: "synthetic" (generated from `seed`) or "idx:DIR" (MNIST-format files,
/// pixels divided by 255 when `normalize`). Throws pe::error naming the file or the spec.
data_splits load_data(const std::string& spec, std::uint64_t seed, bool normalize);

} // namespace pe

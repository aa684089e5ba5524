#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.hpp"

namespace pe {

/// A labelled data set in memory: `images` and `labels` with one row per sample along dim 0.
/// Generated and idx data are `images` FP32 [n, width] and `labels` INT64 [n, 1], the shapes
/// the built-in MLP feeds take; npy data has whatever dtype and row shape its files hold.
struct dataset {
  tensor images;
  tensor labels;

  std::int64_t size() const { return images.dim(0); }
  /// Elements per image (the product of the non-batch dims).
  std::int64_t width() const { return size() == 0 ? 0 : images.numel() / size(); }

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

/// The names of the program variables a data set feeds.
struct feed_names {
  std::string image;
  std::string label;
};

/// The feed names of the built-in models (graph/models/).
inline const feed_names builtin_feeds{"image", "label"};

/// Loads `spec` with the data format it names (data/data_format.hpp): "synthetic" (generated
/// from `seed`), "idx:DIR" (MNIST-format files, pixels divided by 255 when `normalize`) or
/// "npy:DIR" (DIR/<feed>.npy for the `feeds`, see load_npy_dir), or a registered one.
/// Throws pe::error naming the file or the spec.
data_splits load_data(const std::string& spec, std::uint64_t seed, bool normalize,
                      const feed_names& feeds = builtin_feeds);

} // namespace pe

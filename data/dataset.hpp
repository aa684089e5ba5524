#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace pe {

/// One feed of a data set: the program variable it feeds and its rows, one per sample along
/// dim 0, of any dtype and row shape.
struct data_feed {
  std::string name;
  tensor rows;
};

/// A data set in memory: named feeds that all have one row per sample along dim 0, so that
/// slicing and batching take the same rows of every feed. Generated and idx data are two
/// feeds, `image` FP32 [n, width] and `label` INT64 [n, 1] (the built-in models' feeds);
/// npy:DIR data has one feed per feed of the program, of whatever dtype and row shape its
/// file holds.
class dataset {
 public:
  /// How errors name the feed `name`: by default "feed 'NAME'"; a reader names its file.
  using describer = std::function<std::string(const std::string& name)>;

  dataset() = default;

  /// Takes `feeds` in their order. Throws pe::error naming the feed (as `describe` does)
  /// when one is uninitialised or a scalar, when two share a name, and naming both when two
  /// disagree on their number of rows.
  explicit dataset(std::vector<data_feed> feeds, const describer& describe = {});

  /// The number of samples: every feed's rows (0 without feeds).
  std::int64_t size() const { return feeds_.empty() ? 0 : feeds_.front().rows.dim(0); }

  const std::vector<data_feed>& feeds() const { return feeds_; }

  /// The rows of feed `name`, or nullptr when the data set has no such feed.
  const tensor* find(const std::string& name) const;

  /// The rows of feed `name`. Throws pe::error naming it and the feeds there are when absent.
  const tensor& at(const std::string& name) const;

  /// Elements per row of feed `name` (the product of its non-batch dims).
  std::int64_t width(const std::string& name) const;

  /// Samples [begin, end) of every feed, sharing this data set's storage.
  dataset slice(std::int64_t begin, std::int64_t end) const;

 private:
  std::vector<data_feed> feeds_;
};

/// A training set and, where the source has one, a test set.
struct data_splits {
  dataset train;
  std::optional<dataset> test;
};

/// The feeds of generated and idx data, which the built-in models (graph/models/) read.
inline const std::string image_feed = "image", label_feed = "label";
inline const std::vector<std::string> builtin_feeds{image_feed, label_feed};

/// Loads `spec` with the data format it names (data/data_format.hpp): "synthetic" (generated
/// from `seed`), "idx:DIR" (MNIST-format files, pixels divided by 255 when `normalize`) or
/// "npy:DIR" (one file per name in `feeds`, see load_npy_dir), or a registered one.
/// Throws pe::error naming the file or the spec.
data_splits load_data(const std::string& spec, std::uint64_t seed, bool normalize,
                      const std::vector<std::string>& feeds = builtin_feeds);

} // namespace pe

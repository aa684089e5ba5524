#pragma once

#include <string>

#include "data/dataset.hpp"

namespace pe {

/// The file that holds feed `name` in npy:DIR: DIR/<name>.npy, or DIR/test/<name>.npy for
/// the test set.
std::string npy_feed_file(const std::string& dir, const std::string& name, bool test);

/// The rows of feed `name` in npy:DIR (npy_feed_file): throws pe::error naming the file when
/// it is missing, unreadable, a scalar or has no rows.
tensor read_npy_feed(const std::string& dir, const std::string& name, bool test);

/// Loads npy:DIR, one .npy file per feed: DIR/<feeds.image>.npy and DIR/<feeds.label>.npy as
/// the training set (any dtype read_npy reads, rank >= 1, the same number of rows along dim
/// 0) and, when DIR/test/ exists, the same two files there as the test set. Throws pe::error
/// naming the file when one is missing, unreadable, a scalar, has no rows, or disagrees with
/// the other on the row count.
data_splits load_npy_dir(const std::string& dir, const feed_names& feeds);

} // namespace pe

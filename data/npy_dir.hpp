#pragma once

#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace pe {

/// The name of the file that holds feed `name` in an npy:DIR folder: the feed's name with
/// ".npy" appended, where every byte other than an ASCII letter, digit, '_', '-', '.' or '@'
/// is written as '%' and its two upper-case hex digits ("a/b" -> "a%2Fb.npy", "x y" ->
/// "x%20y.npy", "50%" -> "50%25.npy"). Paddle's usual names (input_ids, label, x@GRAD) stay
/// as they are; a '/' cannot leave the folder or reach into test/, and no two names share a
/// file.
std::string npy_file_name(const std::string& name);

/// The file that holds feed `name` in npy:DIR: DIR/<npy_file_name(name)>, or
/// DIR/test/<npy_file_name(name)> for the test set.
std::string npy_feed_file(const std::string& dir, const std::string& name, bool test);

/// The rows of feed `name` in npy:DIR (npy_feed_file): throws pe::error naming the file when
/// it is missing, unreadable, a scalar or has no rows.
tensor read_npy_feed(const std::string& dir, const std::string& name, bool test);

/// The training set (or with `test`, the test set) of npy:DIR: feed `name` of `feeds` from
/// npy_feed_file(dir, name, test), in the order of `feeds`. Throws pe::error naming the file
/// as read_npy_feed does, and naming both files when two disagree on their row count.
dataset read_npy_split(const std::string& dir, const std::vector<std::string>& feeds, bool test);

/// Loads npy:DIR, one .npy file per feed of `feeds` (any dtype read_npy reads, rank >= 1,
/// all with the same number of rows along dim 0): the training set from DIR and, when
/// DIR/test/ exists, the test set from there (read_npy_split). Throws pe::error when DIR is
/// not a directory and as read_npy_split does.
data_splits load_npy_dir(const std::string& dir, const std::vector<std::string>& feeds);

} // namespace pe

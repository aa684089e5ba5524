#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace pe {

/// What every data format's loader is given besides its directory.
struct data_load_options {
  std::uint64_t seed = 1;  ///< what generated data is drawn from
  bool normalize = false;  ///< scale pixels to [0, 1] (formats with `pixels` only)
  /// The program's feeds, which a format with `feeds_by_name` reads one by one.
  std::vector<std::string> feeds = builtin_feeds;
};

/// A source of training data that `--data` names: "synthetic", or "NAME:DIR" for a format
/// read from a directory. A new format is a reader in data/ that returns a data_splits (a
/// dataset of named feeds, data/dataset.hpp) plus one line in data_formats.cpp that
/// registers it here; `--data`, its check, its --help and the loader all read this
/// registry.
struct data_format {
  std::string name;      ///< "synthetic", "idx", "npy"
  bool takes_dir = true; ///< written NAME:DIR; else NAME alone
  /// Whether --normalize applies (pixel data).
  bool pixels = false;
  /// Whether it reads every feed the program has by its name (npy: DIR/<feed>.npy), so each
  /// file's dtype and row shape must match its feed as they are. Else its loader makes feeds
  /// of its own (synthetic and idx: image FP32 and label INT64), each fed to the program's
  /// one feed of its dtype, and an image whose width agrees is reshaped to the program's
  /// rows (idx [n, 784] to [n, 1, 28, 28]).
  bool feeds_by_name = false;
  std::string about; ///< for --help: what it reads
  std::function<data_splits(const std::string& dir, const data_load_options& options)> load;
  /// What errors name as the origin of feed `feed` (a file when feeds_by_name).
  std::function<std::string(const std::string& dir, const std::string& feed, bool test)> origin;
};

/// A parsed --data value: its format and, for formats read from a directory, the directory.
struct data_spec {
  data_format format;
  std::string dir;
  std::string text; ///< as given: "idx:/data/mnist"
};

/// Makes `format` available by its name (replacing one of the same name).
void register_data_format(data_format format);

/// Every format of this build, in registration order.
std::vector<data_format> data_formats();

/// "synthetic, idx:DIR or npy:DIR": the forms --data takes, for messages and --help.
std::string data_spec_forms();

/// Parses `text` against the registry. Throws pe::error "expected synthetic, idx:DIR or
/// npy:DIR, got 'x'" for a name this build lacks, a missing directory or one too many.
data_spec parse_data_spec(const std::string& text);

} // namespace pe

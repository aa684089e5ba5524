#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pe {

/// Everything pe-actor-run was asked to do, checked for consistency by parse_options.
struct run_options {
  std::string model = "mlp"; ///< "mlp" or the path of a ProgramDesc
  std::string startup;       ///< startup program path; set iff model is a path
  std::vector<int> hidden = {256, 128};
  std::int64_t steps = 200;
  std::optional<std::int64_t> epochs; ///< when set, steps = epochs * batches per epoch
  std::int64_t batch_size = 64;
  double learning_rate = 0.1;
  std::string optimizer = "sgd";
  std::uint64_t seed = 1;
  std::string data = "synthetic"; ///< "synthetic" or "idx:DIR"
  bool eval = false;
  bool normalize = false;
  std::string save_program; ///< directory; empty: do not save
  std::string metrics;      ///< JSON file; empty: do not write
  std::string places = "cpu:1";
  std::string executor = "reference";
  int blas_threads = 1;

  /// True when `model` names the built-in MLP rather than a program file.
  bool builtin_model() const { return model == "mlp"; }
};

/// Parses the command line. Prints the help text to `help_out` and returns nullopt for
/// --help; throws pe::error naming the flag for anything unknown, malformed or inconsistent.
std::optional<run_options> parse_options(int argc, const char* const* argv, std::ostream& help_out);

/// The options as the metrics file's "config" object echoes them.
nlohmann::json to_json(const run_options& options);

} // namespace pe

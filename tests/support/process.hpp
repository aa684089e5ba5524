#pragma once

#include <filesystem>
#include <string>

namespace pe::testing {

/// The whole content of a file ("" when it cannot be read).
std::string slurp(const std::string& path);

/// How a program run through the shell ended.
struct run_result {
  int status; ///< exit code; -1 when killed by a signal
  std::string out;
  std::string err;
};

/// Runs `binary args` (shell words) with stdout and stderr captured in files under `scratch`.
/// CPU_NUM is unset unless `env` sets it (env(1) words: NAME=VALUE or -u NAME), so that the
/// caller's environment cannot leak into the run.
run_result run_binary(const std::string& binary, const std::string& args,
                      const std::filesystem::path& scratch, const std::string& env = "");

} // namespace pe::testing

#pragma once

#include <filesystem>
#include <string>
#include <vector>

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

/// The pe-actor-run that tests start: $PE_RUN_BINARY when set (tests built elsewhere and run
/// from a copy, as scripts/gpu_check.sh --prebuilt runs them), else the one built beside them.
std::string pe_actor_run_binary();

/// `text` cut at newlines (a last line without one included).
std::vector<std::string> lines_of(const std::string& text);

/// `binary args` as execve takes them, with this process's environment less CPU_NUM (so that
/// the caller's cannot leak into the run) and less the variables `set` names, plus `set`
/// (NAME=VALUE words). Built before fork, so that the child only calls execve.
class exec_command {
 public:
  exec_command(const std::string& binary, const std::vector<std::string>& args,
               const std::vector<std::string>& set = {});
  exec_command(const exec_command&) = delete; // argv and envp point into the words
  exec_command& operator=(const exec_command&) = delete;

  /// Replaces this process with the command (async-signal-safe); returns only on failure.
  void exec() const noexcept;

 private:
  std::vector<std::string> words_;
  std::vector<std::string> env_words_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

} // namespace pe::testing

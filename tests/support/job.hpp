#pragma once

// Jobs of several real pe-actor-run processes on 127.0.0.1, for the tests that start them
// (multiprocess_test on CPU places, gpu_jobs_test on GPU places): each process's output in
// files, every wait bounded, and every process killed and reaped when its handle is dropped.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "tests/idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe::testing {

/// One pe-actor-run process of a job, its output in files; killed and reaped when dropped.
class rank_process {
 public:
  rank_process(const std::vector<std::string>& args, const std::string& out, const std::string& err,
               const std::string& binary = pe_actor_run_binary());
  ~rank_process();
  rank_process(const rank_process&) = delete;
  rank_process& operator=(const rank_process&) = delete;

  pid_t pid() const { return pid_; }

  /// The exit status (128 + signal when killed; 127 when it could not be started, err() then
  /// saying why), or nullopt while still running after `limit`.
  std::optional<int> wait(std::chrono::milliseconds limit);

  std::string out() const;
  std::string err() const;

  /// Waits (bounded) until the output contains `text`.
  bool printed(const std::string& text, std::chrono::milliseconds limit) const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string out_, err_;
};

/// A job of `n` processes with the same flags (plus `extra[r]` for rank r), meeting at a free
/// port of 127.0.0.1.
struct job {
  job(const temp_dir& dir, int n, const std::vector<std::string>& flags,
      const std::vector<std::vector<std::string>>& extra = {});

  /// Every rank's standard error, each under a "-- rank r" line: for failure messages.
  std::string errors() const;

  /// Every rank's exit status (nullopt: still running after the limit).
  std::vector<std::optional<int>> wait(std::chrono::milliseconds limit = std::chrono::seconds(120));

  std::vector<std::unique_ptr<rank_process>> ranks;
};

/// The step losses a --metrics file holds, in step order (empty when it cannot be read).
std::vector<double> losses(const std::string& metrics_file);

/// `text` split at spaces.
std::vector<std::string> words(const std::string& text);

} // namespace pe::testing

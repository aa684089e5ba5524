#pragma once

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/process.hpp"

namespace pe::testing {

/// pe-actor-run started with fork and exec (without CPU_NUM), its stdout and stderr in one
/// pipe the test reads. Destroying it kills and reaps a process still running, so no test
/// leaves one behind.
class child_run {
 public:
  explicit child_run(const std::vector<std::string>& args) {
    const exec_command command(pe_actor_run_binary(), args);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) { // the child: only async-signal-safe calls until exec
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(fds[1], STDERR_FILENO);
      command.exec();
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
    if (pid_ < 0)
      throw std::runtime_error("fork failed");
  }

  ~child_run() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0)
      ::close(fd_);
  }
  child_run(const child_run&) = delete;
  child_run& operator=(const child_run&) = delete;

  /// Reads the output until it holds `text`; false when `limit` passes first or the output
  /// ends without it.
  bool wait_for(const std::string& text, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (output_.find(text) == std::string::npos) {
      if (eof_ || std::chrono::steady_clock::now() >= deadline)
        return false;
      read_some(deadline);
    }
    return true;
  }

  void send(int signal) const { ::kill(pid_, signal); }

  /// Reads the output to its end and reaps the process; its wait status, or nullopt when
  /// `limit` passes first (the destructor then kills it).
  std::optional<int> wait_exit(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!eof_) {
        read_some(deadline);
        continue;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }

  const std::string& output() const { return output_; }

 private:
  /// Waits up to 100 ms (and not past `deadline`) for output and appends what came.
  void read_some(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 100))) <= 0)
      return;
    char buffer[4096];
    const auto n = ::read(fd_, buffer, sizeof buffer);
    if (n <= 0)
      eof_ = true;
    else
      output_.append(buffer, static_cast<std::size_t>(n));
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string output_;
  bool eof_ = false;
};

} // namespace pe::testing

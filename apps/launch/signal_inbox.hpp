#pragma once

#include <vector>

#include <signal.h>

#include "apps/launch/unique_fd.hpp"

namespace pe {

/// The signals pe-actor-launch acts on, read from a signalfd in its poll loop instead of
/// handled asynchronously: SIGINT and SIGTERM (each unless the launcher was started ignoring
/// it) and SIGCHLD are blocked and queued for take(). SIGPIPE is blocked too, so that writing
/// to a closed stdout fails with EPIPE instead of killing the launcher. One inbox lives as
/// long as the launcher, and the signals stay blocked after it: one that arrives while the
/// launcher exits must not end it with another status.
class signal_inbox {
 public:
  signal_inbox();
  signal_inbox(const signal_inbox&) = delete;
  signal_inbox& operator=(const signal_inbox&) = delete;

  /// Readable (for poll) when a signal is waiting.
  int fd() const { return fd_.get(); }

  /// The signal mask before this inbox blocked its signals: the one children start with.
  const sigset_t& original_mask() const { return original_mask_; }

  /// The signals that have arrived since the last call, oldest first (each at most once
  /// between two calls: standard signals are not queued twice).
  std::vector<int> take();

 private:
  sigset_t original_mask_;
  unique_fd fd_;
};

} // namespace pe

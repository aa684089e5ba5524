#pragma once

#include <atomic>
#include <csignal>
#include <string>

namespace pe {

/// Ctrl-C and SIGTERM for a training run. While an interrupt_handler lives, the first SIGINT
/// or SIGTERM only records the signal (an atomic store, all a handler may safely do): the
/// training loop polls `signal()` at every step boundary and winds down, writing its
/// metrics, summary and checkpoint. A second one ends the process at once with
/// _exit(128 + signal), for a user who does not want to wait. At most one lives at a time;
/// destroying it restores the previous dispositions.
class interrupt_handler {
 public:
  interrupt_handler();
  ~interrupt_handler();
  interrupt_handler(const interrupt_handler&) = delete;
  interrupt_handler& operator=(const interrupt_handler&) = delete;

  /// The first signal received (SIGINT or SIGTERM), 0 while none has been.
  int signal() const;
};

/// SIGUSR1 for a training run: asks for a report of the running step (the stall watch's
/// report, on demand). While a report_signal lives, SIGUSR1 only sets flag() (a lock-free
/// atomic store, all a handler may safely do); the executor looks at the flag during a
/// step (at least once a second) and the training loop between steps, and whoever takes it
/// clears it. Nothing else happens: the step goes on undisturbed. At most one lives at a
/// time; destroying it restores the previous disposition.
class report_signal {
 public:
  report_signal();
  ~report_signal();
  report_signal(const report_signal&) = delete;
  report_signal& operator=(const report_signal&) = delete;

  std::atomic<bool>& flag();

 private:
  struct sigaction previous_ {};
};

/// "SIGINT", "SIGTERM", or "signal N" for another.
std::string signal_name(int signal);

/// The exit status of a process that ends because of `signal`, as a shell reports it: 128 +
/// signal (130 for SIGINT, 143 for SIGTERM).
inline int exit_status_for(int signal) { return 128 + signal; }

} // namespace pe

#pragma once

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

/// "SIGINT", "SIGTERM", or "signal N" for another.
std::string signal_name(int signal);

/// The exit status of a process that ends because of `signal`, as a shell reports it: 128 +
/// signal (130 for SIGINT, 143 for SIGTERM).
inline int exit_status_for(int signal) { return 128 + signal; }

} // namespace pe

#include "apps/run/signals.hpp"

#include <atomic>
#include <csignal>

#include <unistd.h>

#include "core/error.hpp"

namespace pe {

namespace {

// Written by the handler, so it must be lock-free to be async-signal-safe.
std::atomic<int> received{0};
static_assert(std::atomic<int>::is_always_lock_free);

constexpr int handled[] = {SIGINT, SIGTERM};
struct sigaction previous[std::size(handled)];

extern "C" void on_signal(int signal) {
  int none = 0;
  if (!received.compare_exchange_strong(none, signal))
    _exit(exit_status_for(signal)); // the second one: no waiting for the step to end
}

// Set by SIGUSR1's handler, taken by whoever prints the report.
std::atomic<bool> report_asked{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_report_signal(int) {
  report_asked.store(true);
}

} // namespace

report_signal::report_signal() {
  report_asked.store(false);
  struct sigaction action {};
  action.sa_handler = on_report_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART; // as for SIGINT: blocking calls go on
  if (sigaction(SIGUSR1, &action, &previous_) != 0) throw error("cannot install the handler for SIGUSR1");
}

report_signal::~report_signal() {
  sigaction(SIGUSR1, &previous_, nullptr);
}

std::atomic<bool>& report_signal::flag() {
  return report_asked;
}

interrupt_handler::interrupt_handler() {
  received.store(0);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART; // blocking calls elsewhere go on rather than fail with EINTR
  for (std::size_t i = 0; i < std::size(handled); ++i)
    if (sigaction(handled[i], &action, &previous[i]) != 0)
      throw error("cannot install the handler for " + signal_name(handled[i]));
}

interrupt_handler::~interrupt_handler() {
  for (std::size_t i = 0; i < std::size(handled); ++i)
    sigaction(handled[i], &previous[i], nullptr);
}

int interrupt_handler::signal() const {
  return received.load();
}

std::string signal_name(int signal) {
  if (signal == SIGINT)
    return "SIGINT";
  if (signal == SIGTERM)
    return "SIGTERM";
  if (signal == SIGUSR1)
    return "SIGUSR1";
  return "signal " + std::to_string(signal);
}

} // namespace pe

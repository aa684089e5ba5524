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

} // namespace

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
  return "signal " + std::to_string(signal);
}

} // namespace pe

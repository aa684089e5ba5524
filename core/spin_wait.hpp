#pragma once

#include <chrono>
#include <thread>

namespace pe {

/// Yields the core until `ready()` is true or `limit` has passed, and returns ready()'s last
/// answer. The first half of the engine's waits (a device thread out of work, a host thread
/// waiting for a stream or an event): most of them last microseconds, less than a sleep and
/// a wake-up cost, so a waiter spins briefly, yielding, before it sleeps in its own way.
template <class Ready>
bool spin_until(std::chrono::microseconds limit, Ready&& ready) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (ready()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::yield();
  }
}

} // namespace pe

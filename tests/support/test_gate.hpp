#pragma once

// test_gate: an op for tests only (X -> Out, a copy) whose CPU kernel on a chosen place
// blocks until the test releases it, or sleeps: how a test holds a step in flight (a stall,
// a slow kernel, work that must happen while the step runs). Registered in the op and kernel
// registries of every binary that uses gate() or gated_mlp(). Every wait is bounded.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "graph/models/mlp.hpp"

namespace pe::testing {

/// How long a blocked gate waits for its release before it passes anyway.
inline constexpr auto gate_limit = std::chrono::seconds(60);

/// What test_gate's kernel does on place `blocked_place`: pass (the default), block until
/// released, or sleep `sleep_ms` (a slow kernel). Other places always pass.
struct gate_control {
  std::mutex mutex;
  std::condition_variable changed;
  bool block = false;
  bool released = false;
  int sleep_ms = 0;
  int blocked_place = 0;
  int waiting = 0; // kernels blocked now

  void arm(int place) {
    std::lock_guard<std::mutex> guard(mutex);
    block = true;
    released = false;
    blocked_place = place;
  }
  void release() {
    std::lock_guard<std::mutex> guard(mutex);
    released = true;
    block = false;
    changed.notify_all();
  }
  /// The kernel's wait; bounded so that a failing test cannot hang the binary.
  void pass(int place) {
    std::unique_lock<std::mutex> lock(mutex);
    if (place != blocked_place) return;
    if (sleep_ms > 0) {
      const auto ms = sleep_ms;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      return;
    }
    if (!block) return;
    ++waiting;
    changed.notify_all();
    changed.wait_for(lock, gate_limit, [this] { return released; });
    --waiting;
  }
  bool wait_until_blocked() {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, gate_limit, [this] { return waiting > 0; });
  }
};

/// The gate every test_gate kernel of this binary obeys.
gate_control& gate();

/// The MLP with `gates` test_gate ops in series first in its main program: the image goes
/// through them, and every op that read the image reads the last gate's output.
model_programs gated_mlp(int gates);

} // namespace pe::testing

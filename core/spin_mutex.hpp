#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pe {

/// A mutex that never puts its waiter to sleep: it spins (pausing the core) briefly, then
/// yields the core until the holder lets go. Lockable, so std::lock_guard and
/// std::condition_variable_any take it. Only for critical sections of a few instructions
/// that never block while held.
///
/// Why not std::mutex: glibc's mutex sleeps in the kernel (futex) at the first contention,
/// and a sleeper is woken tens of microseconds later on a virtual machine's vCPU. A CPU
/// device thread polls its streams' queues while the host thread pushes work into them;
/// once the two threads ran on different cores, each step met the lock held by the other
/// dozens of times, and the in-graph-schedule MLP on 1 place fell from 330k samples/s to
/// 140k (perf: 25,000 futex sleeps in 2 s, in cpu_stream::ready, step and push).
class spin_mutex {
 public:
  void lock() noexcept {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // Test before trying again: the waiter reads its cached copy of the line while the
      // holder runs, and tries the exchange only once the line says free.
      for (int spins = 0; locked_.load(std::memory_order_relaxed);) {
        if (spins < 128) {
          pause();
          ++spins; // counted only this far: a long hold must not overflow it
        } else {
          std::this_thread::yield(); // the holder may share this core
        }
      }
    }
  }

  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }

  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  std::atomic<bool> locked_{false};
};

} // namespace pe

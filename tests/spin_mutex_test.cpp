// core/spin_mutex.hpp: the lock of the CPU streams' queues and the in-process communicator's
// meetings. It must exclude like a mutex, work with condition_variable_any, and never put a
// waiter to sleep in the kernel (the reason it exists: a futex sleep costs tens of
// microseconds to wake on a virtual machine, and the device and host threads met on the
// stream's lock dozens of times a step).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <gtest/gtest.h>

#include "core/spin_mutex.hpp"

namespace {

/// The calling thread's voluntary context switches so far: each time it blocked in the
/// kernel (a futex wait, a sleep), not the yields, which count as involuntary.
long voluntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nvcsw;
}

TEST(spin_mutex, excludes_the_threads_that_share_it) {
  pe::spin_mutex m;
  long counter = 0; // plain: a lost update (or ThreadSanitizer) shows a hole in the exclusion
  constexpr int threads = 4, rounds = 20000;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        std::lock_guard<pe::spin_mutex> guard(m);
        ++counter;
      }
    });
  for (auto& w : workers) w.join();
  EXPECT_EQ(counter, static_cast<long>(threads) * rounds);
}

TEST(spin_mutex, try_lock_fails_while_it_is_held_and_succeeds_once_released) {
  pe::spin_mutex m;
  m.lock();
  bool taken = true;
  std::thread other([&] { taken = m.try_lock(); });
  other.join();
  EXPECT_FALSE(taken);
  m.unlock();
  std::thread again([&] {
    taken = m.try_lock();
    if (taken) m.unlock();
  });
  again.join();
  EXPECT_TRUE(taken);
}

TEST(spin_mutex, a_condition_variable_any_waits_and_wakes_with_it) {
  pe::spin_mutex m;
  std::condition_variable_any changed;
  bool ready = false;
  std::thread waiter([&] {
    std::unique_lock<pe::spin_mutex> lock(m);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return ready; }));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  {
    std::lock_guard<pe::spin_mutex> guard(m);
    ready = true;
  }
  changed.notify_all();
  waiter.join();
}

TEST(spin_mutex, a_waiter_never_sleeps_in_the_kernel) {
  // The holder keeps the lock a millisecond at a time; std::mutex would put the waiter to
  // sleep once per round (a voluntary switch each), the spin_mutex spins and yields.
  pe::spin_mutex m;
  constexpr int rounds = 20;
  std::atomic<int> held{0}, taken{0};
  std::thread holder([&] {
    for (int r = 1; r <= rounds; ++r) {
      while (taken.load() != r - 1) std::this_thread::yield();
      m.lock();
      held = r;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      m.unlock();
    }
  });
  long slept = 0;
  std::thread waiter([&] {
    const long before = voluntary_switches();
    for (int r = 1; r <= rounds; ++r) {
      while (held.load() != r) std::this_thread::yield();
      m.lock(); // the holder has it for about a millisecond more
      m.unlock();
      taken = r;
    }
    slept = voluntary_switches() - before;
  });
  holder.join();
  waiter.join();
  // Not 0: a page fault or the scheduler's own business may block it once or twice.
  EXPECT_LT(slept, rounds / 4);
}

} // namespace

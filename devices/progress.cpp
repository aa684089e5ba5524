#include "devices/progress.hpp"

#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>

#include "core/error.hpp"

namespace pe {

namespace {

struct progress_state {
  std::atomic<std::uint64_t> epoch{0};
  std::array<std::atomic<void (*)()>, 4> hooks{};
  std::mutex mutex;
  std::condition_variable advanced;
  std::atomic<int> waiters{0};
};

progress_state& state() {
  static auto* s = new progress_state; // never destroyed: device threads may outlive statics
  return *s;
}

} // namespace

void notify_progress() {
  progress_state& s = state();
  s.epoch.fetch_add(1);
  for (auto& hook : s.hooks)
    if (auto* h = hook.load()) h();
  // seq_cst with wait_for_progress(), which registers and then reads the epoch: either it
  // sees this epoch, or this sees it waiting.
  if (s.waiters.load() == 0) return;
  std::lock_guard<std::mutex> guard(s.mutex);
  s.advanced.notify_all();
}

std::uint64_t progress_epoch() {
  return state().epoch.load();
}

void wait_for_progress(std::uint64_t seen, std::chrono::microseconds limit) {
  progress_state& s = state();
  s.waiters.fetch_add(1);
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.advanced.wait_for(lock, limit, [&] { return s.epoch.load() != seen; });
  }
  s.waiters.fetch_sub(1);
}

void add_progress_hook(void (*hook)()) {
  for (auto& slot : state().hooks) {
    void (*empty)() = nullptr;
    if (slot.load() == hook || slot.compare_exchange_strong(empty, hook)) return;
  }
  throw error("add_progress_hook: more than 4 hooks");
}

} // namespace pe

#include "devices/cpu/cpu_stream.hpp"

#include <chrono>

#include "devices/error.hpp"

namespace pe {

namespace {

/// How long an idle stream thread keeps looking for work before it sleeps: long enough to
/// bridge the gap between two kernels the host enqueues back to back, short enough not to
/// steal a core on this 2-core machine from threads with real work.
constexpr auto idle_spin = std::chrono::microseconds(20);

/// A stream waiting on another stream re-checks its own stop flag this often: the other
/// stream does not know who waits on it, so nobody would wake it when it is stopped.
constexpr auto stop_poll = std::chrono::milliseconds(2);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

cpu_event& as_cpu(event& e) {
  auto* c = dynamic_cast<cpu_event*>(&e);
  if (c == nullptr) throw error("cpu stream: the event belongs to another kind of device");
  return *c;
}

const cpu_event& as_cpu(const event& e) {
  return as_cpu(const_cast<event&>(e));
}

} // namespace

std::string to_string(stream_kind kind) {
  switch (kind) {
    case stream_kind::compute: return "compute";
    case stream_kind::communication: return "communication";
    case stream_kind::copy: return "copy";
  }
  return "?";
}

// --- cpu_event -------------------------------------------------------------------------

bool cpu_event::query() const {
  const cpu_stream* s = stream_.load(std::memory_order_acquire);
  return s == nullptr || s->completed_.load(std::memory_order_acquire) >= ticket_.load() ||
         s->stopping_.load();
}

bool cpu_event::synchronize() const {
  const cpu_stream* s = stream_.load(std::memory_order_acquire);
  if (s == nullptr) return true;
  const std::uint64_t ticket = ticket_.load(std::memory_order_acquire);
  return s->wait_for(ticket, nullptr) && !s->failed_at_or_before(ticket);
}

// --- cpu_stream ------------------------------------------------------------------------

cpu_stream::cpu_stream(place where, stream_kind kind)
    : place_(where), kind_(kind), thread_([this] { run(); }) {}

cpu_stream::~cpu_stream() {
  stop();
}

void cpu_stream::stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
    queue_.clear();
    work_ready_.notify_all();
    finished_.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void cpu_stream::push(item it) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (stopping_) return; // a stopped stream drops work, as it drops what was queued
  it.ticket = ++enqueued_;
  queue_.push_back(std::move(it));
  work_ready_.notify_one();
}

void cpu_stream::enqueue(task work) {
  push(item{0, std::move(work), {}});
}

void cpu_stream::enqueue_always(std::function<void(bool failed)> work) {
  push(item{0, {}, std::move(work)});
}

void cpu_stream::record(event& e) {
  cpu_event& c = as_cpu(e);
  std::lock_guard<std::mutex> guard(mutex_);
  c.ticket_.store(enqueued_, std::memory_order_release);
  c.stream_.store(this, std::memory_order_release);
}

void cpu_stream::wait(const event& e) {
  const cpu_event& c = as_cpu(e);
  cpu_stream* target = c.stream_.load(std::memory_order_acquire);
  if (target == nullptr || target == this) return; // never recorded, or stream order suffices
  // The snapshot is taken now: a later record() of the event does not move this wait.
  push(item{0, {}, {}, target, c.ticket_.load(std::memory_order_acquire)});
}

bool cpu_stream::synchronize() {
  std::uint64_t ticket;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    ticket = enqueued_;
  }
  return wait_for(ticket, nullptr) && !failed_at_or_before(ticket);
}

std::optional<std::string> cpu_stream::error() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return error_;
}

void cpu_stream::clear_error() {
  std::lock_guard<std::mutex> guard(mutex_);
  error_.reset();
  failed_at_ = no_failure;
}

bool cpu_stream::failed_at_or_before(std::uint64_t ticket) const {
  return failed_at_.load(std::memory_order_acquire) <= ticket || stopping_.load();
}

void cpu_stream::fail(std::uint64_t ticket, std::string message) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (failed_at_.load() != no_failure) return;
  error_ = std::move(message);
  failed_at_.store(ticket, std::memory_order_release);
}

bool cpu_stream::wait_for(std::uint64_t ticket, const cpu_stream* waiter) const {
  auto done = [&] {
    return completed_.load() >= ticket || stopping_.load() || (waiter && waiter->stopping_.load());
  };
  if (done()) return !stopping_.load() && !(waiter && waiter->stopping_.load());
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiters_; // seq_cst with the thread's store of completed_: one of the two sees the other
  while (!done()) {
    if (waiter != nullptr) finished_.wait_for(lock, stop_poll);
    else finished_.wait(lock);
  }
  --waiters_;
  return !stopping_.load() && !(waiter && waiter->stopping_.load());
}

void cpu_stream::execute(item& it) {
  if (it.wait_on != nullptr) {
    if (!it.wait_on->wait_for(it.wait_ticket, this)) {
      if (!stopping_) fail(it.ticket, "waited on failed work of the " + to_string(it.wait_on->kind_) +
                                          " stream of " + pe::to_string(it.wait_on->place_));
    } else if (it.wait_on->failed_at_or_before(it.wait_ticket)) {
      fail(it.ticket, "waited on failed work of the " + to_string(it.wait_on->kind_) +
                          " stream of " + pe::to_string(it.wait_on->place_));
    }
    return;
  }
  const bool failed = failed_at_.load(std::memory_order_acquire) != no_failure;
  if (failed && !it.always_work) return; // poisoned: skip
  try {
    if (it.always_work) it.always_work(failed);
    else it.work();
  } catch (const std::exception& e) {
    fail(it.ticket, e.what());
  } catch (...) {
    fail(it.ticket, "unknown exception");
  }
}

void cpu_stream::run() {
  for (;;) {
    item it;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (queue_.empty() && !stopping_) {
        lock.unlock();
        const auto until = std::chrono::steady_clock::now() + idle_spin;
        while (std::chrono::steady_clock::now() < until) {
          for (int i = 0; i < 64; ++i) cpu_relax();
          if (completed_.load(std::memory_order_relaxed) != enqueued_.load(std::memory_order_relaxed)) break;
        }
        lock.lock();
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      }
      if (stopping_) return;
      it = std::move(queue_.front());
      queue_.pop_front();
    }
    execute(it);
    it.work = nullptr; // release what the task captured before the work counts as finished
    it.always_work = nullptr;
    completed_.store(it.ticket);
    if (waiters_.load() > 0) {
      std::lock_guard<std::mutex> guard(mutex_);
      finished_.notify_all();
    }
  }
}

} // namespace pe

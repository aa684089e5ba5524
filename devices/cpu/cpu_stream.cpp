#include "devices/cpu/cpu_stream.hpp"

#include "core/error.hpp"
#include "core/spin_wait.hpp"
#include "devices/cpu/cpu_device.hpp"
#include "devices/progress.hpp"
#include "devices/stream_contract.hpp"

namespace pe {

namespace {

cpu_event& as_cpu(event& e) {
  auto* c = dynamic_cast<cpu_event*>(&e);
  if (c == nullptr) throw error("cpu stream: the event belongs to another kind of device");
  return *c;
}

const cpu_event& as_cpu(const event& e) {
  return as_cpu(const_cast<event&>(e));
}

} // namespace

// --- cpu_event -------------------------------------------------------------------------

bool cpu_event::query() const {
  const cpu_stream* s = stream_.load(std::memory_order_acquire);
  return s == nullptr || s->finished(ticket_.load(std::memory_order_acquire));
}

bool cpu_event::synchronize() const {
  const cpu_stream* s = stream_.load(std::memory_order_acquire);
  if (s == nullptr) return true;
  const std::uint64_t ticket = ticket_.load(std::memory_order_acquire);
  return s->wait_for(ticket) && !s->failed_at_or_before(ticket);
}

bool cpu_event::when_done(std::function<void()> then) const {
  cpu_stream* s = stream_.load(std::memory_order_acquire);
  if (s == nullptr) then(); // never recorded: complete
  else s->call_when_finished(ticket_.load(std::memory_order_acquire), std::move(then));
  return true;
}

// --- cpu_stream ------------------------------------------------------------------------

cpu_stream::cpu_stream(cpu_device& owner, stream_kind kind) : owner_(owner), kind_(kind) {}

place cpu_stream::where() const {
  return owner_.where();
}

void cpu_stream::stop() {
  {
    std::lock_guard<spin_mutex> guard(mutex_);
    stopping_ = true;
    finished_.notify_all();
  }
  run_due_callbacks(); // every ticket counts as finished now
}

void cpu_stream::call_when_finished(std::uint64_t ticket, std::function<void()> then) {
  {
    std::lock_guard<spin_mutex> guard(mutex_);
    // Counted before the check, both seq_cst, as finish() stores completed_ before it
    // reads the count: either this sees the ticket finished, or finish() sees the callback.
    pending_callbacks_.fetch_add(1);
    if (!finished(ticket)) {
      callbacks_.push_back({ticket, std::move(then)});
      return;
    }
    pending_callbacks_.fetch_sub(1);
  }
  then();
}

void cpu_stream::run_due_callbacks() {
  std::vector<std::function<void()>> due;
  {
    std::lock_guard<spin_mutex> guard(mutex_);
    for (auto it = callbacks_.begin(); it != callbacks_.end();) {
      if (!finished(it->ticket)) {
        ++it;
        continue;
      }
      due.push_back(std::move(it->then));
      it = callbacks_.erase(it);
      pending_callbacks_.fetch_sub(1);
    }
  }
  for (auto& then : due) then(); // unlocked: a callback may enqueue here or wait on this stream
}

void cpu_stream::drop_queue() {
  std::deque<item> dropped;
  std::lock_guard<spin_mutex> guard(mutex_);
  dropped.swap(queue_);
}

void cpu_stream::push(item it) {
  {
    std::lock_guard<spin_mutex> guard(mutex_);
    if (stopping_) return; // a stopped stream drops work, as it dropped what was queued
    it.ticket = ++enqueued_;
    queue_.push_back(std::move(it));
  }
  owner_.wake();
}

void cpu_stream::enqueue(task work) {
  item it;
  it.work = std::move(work);
  push(std::move(it));
}

void cpu_stream::enqueue_always(std::function<void(bool failed)> work) {
  enqueue_polled([work = std::move(work)](bool failed) {
    work(failed);
    return true;
  });
}

void cpu_stream::enqueue_polled(polled_task work) {
  item it;
  it.polled = std::move(work);
  push(std::move(it));
}

void cpu_stream::record(event& e) {
  cpu_event& c = as_cpu(e);
  // No lock: the tickets enqueued so far are what a record captures; a push racing with it
  // from another thread is ordered by neither, as in CUDA.
  c.ticket_.store(enqueued_.load(), std::memory_order_release);
  c.stream_.store(this, std::memory_order_release);
}

void cpu_stream::wait(const event& e) {
  const cpu_event& c = as_cpu(e);
  cpu_stream* target = c.stream_.load(std::memory_order_acquire);
  if (target == nullptr || target == this) return; // never recorded, or stream order suffices
  // The snapshot is taken now: a later record() of the event does not move this wait.
  item it;
  it.wait_on = target;
  it.wait_ticket = c.ticket_.load(std::memory_order_acquire);
  // Until this wait is done, the target announces its progress to sleeping devices. Counted
  // before the wait is queued, so no device can find it unsatisfied and sleep uncounted.
  target->watchers_.fetch_add(1);
  push(std::move(it));
}

bool cpu_stream::synchronize() {
  const std::uint64_t ticket = enqueued_.load();
  return wait_for(ticket) && !failed_at_or_before(ticket);
}

std::optional<bool> cpu_stream::synchronize_for(std::chrono::milliseconds limit) {
  const std::uint64_t ticket = enqueued_.load();
  const auto finished_ok = wait_for(ticket, limit);
  if (!finished_ok) return std::nullopt;
  return *finished_ok && !failed_at_or_before(ticket);
}

std::optional<std::string> cpu_stream::error() const {
  return failure_.message();
}

pe::error_kind cpu_stream::error_kind() const {
  return failure_.kind();
}

void cpu_stream::clear_error() {
  failure_.clear();
}

bool cpu_stream::finished(std::uint64_t ticket) const {
  return completed_.load() >= ticket || stopping_.load();
}

bool cpu_stream::failed_at_or_before(std::uint64_t ticket) const {
  return failure_.failed_at_or_before(ticket) || stopping_.load();
}

void cpu_stream::fail(std::uint64_t ticket, failure why) {
  failure_.record(ticket, std::move(why));
}

bool cpu_stream::wait_for(std::uint64_t ticket) const {
  // Spin briefly (yielding the core) first: a host thread that waits for a step's end
  // usually has only microseconds to wait, and a wake-up costs more.
  if (!spin_until(std::chrono::microseconds(50), [&] { return finished(ticket); })) {
    std::unique_lock<spin_mutex> lock(mutex_);
    ++waiters_; // seq_cst with finish()'s store of completed_: one of the two sees the other
    finished_.wait(lock, [&] { return finished(ticket); });
    --waiters_;
  }
  return !stopping_.load();
}

std::optional<bool> cpu_stream::wait_for(std::uint64_t ticket, std::chrono::milliseconds limit) const {
  if (!spin_until(std::chrono::microseconds(50), [&] { return finished(ticket); })) {
    std::unique_lock<spin_mutex> lock(mutex_);
    ++waiters_; // as in wait_for(ticket)
    const bool done = finished_.wait_for(lock, limit, [&] { return finished(ticket); });
    --waiters_;
    if (!done) return std::nullopt;
  }
  return !stopping_.load();
}

bool cpu_stream::head_ready() const {
  if (queue_.empty() || stopping_) return false; // (call with mutex_ held)
  const item& head = queue_.front();
  if (head.wait_on != nullptr) return head.wait_on->finished(head.wait_ticket);
  return !head.parked || progress_epoch() != head.parked_at;
}

bool cpu_stream::ready() const {
  if (completed_.load() == enqueued_.load()) return false; // empty, without the lock
  std::lock_guard<spin_mutex> guard(mutex_);
  return head_ready();
}

bool cpu_stream::execute(item& it) {
  if (it.wait_on != nullptr) {
    if (!it.wait_on->finished(it.wait_ticket)) return false;
    if (it.wait_on->failed_at_or_before(it.wait_ticket))
      fail(it.ticket, waited_on_failed_work("the " + to_string(it.wait_on->kind_) + " stream of " +
                                            pe::to_string(it.wait_on->where())));
    return true;
  }
  return run_stream_work(failure_, it.ticket, static_cast<bool>(it.polled), [&](bool failed) {
    if (it.polled) return it.polled(failed);
    it.work();
    return true;
  });
}

bool cpu_stream::step() {
  if (completed_.load() == enqueued_.load()) return false; // empty, without the lock
  item it;
  {
    std::lock_guard<spin_mutex> guard(mutex_);
    if (!head_ready()) return false;
    if (queue_.front().polled) return step_polled();
    // Plain work and waits leave the queue before they run: one lock per item, and only
    // this thread ever looks at the head.
    it = std::move(queue_.front());
    queue_.pop_front();
  }
  const std::uint64_t ticket = it.ticket;
  execute(it);
  if (it.wait_on != nullptr) it.wait_on->watchers_.fetch_sub(1);
  it = item(); // what the task captured is dropped before it counts as finished
  finish(ticket);
  return true;
}

bool cpu_stream::step_polled() {
  // Called with mutex_ held; polled work stays at the head until it says it is done, and
  // the poll runs unlocked (it may take long, and it may enqueue elsewhere).
  item* head = &queue_.front(); // stays valid: only this thread pops, push_back keeps references
  mutex_.unlock();
  // Read before polling: progress made during the poll leaves the head ready.
  const std::uint64_t epoch = progress_epoch();
  const bool done = execute(*head);
  mutex_.lock();
  if (!done) {
    head->parked = true;
    head->parked_at = epoch;
    return false;
  }
  const std::uint64_t ticket = head->ticket;
  item finished_item = std::move(queue_.front());
  queue_.pop_front();
  mutex_.unlock();
  finished_item = item();
  finish(ticket);
  mutex_.lock(); // the caller's guard unlocks
  return true;
}

void cpu_stream::finish(std::uint64_t ticket) {
  completed_.store(ticket);
  if (waiters_.load() > 0) {
    std::lock_guard<spin_mutex> guard(mutex_);
    finished_.notify_all();
  }
  // Only when a stream of another device waits on this one: every kernel would otherwise
  // wake a place that sleeps waiting for the other places.
  if (watchers_.load() > 0) notify_progress();
  if (pending_callbacks_.load() > 0) run_due_callbacks();
}

} // namespace pe

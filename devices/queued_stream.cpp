#include "devices/queued_stream.hpp"

#include <chrono>
#include <cstdio>

#include "core/error.hpp"
#include "core/host_profile.hpp"
#include "core/spin_wait.hpp"
#include "core/steady_clock.hpp"
#include "devices/stream_contract.hpp"

namespace pe {

namespace {

/// How long an idle stream thread keeps looking for work before it sleeps.
constexpr auto idle_spin = std::chrono::microseconds(50);

/// How often an idle stream thread looks at the device for the ends of pending spans.
constexpr auto span_poll = std::chrono::microseconds(200);

/// Adds the nanoseconds since `since` and one call to a profile's pair.
void count(std::atomic<std::uint64_t>& ns, std::atomic<std::uint64_t>& calls, std::int64_t since) {
  ns.fetch_add(static_cast<std::uint64_t>(steady_ns() - since), std::memory_order_relaxed);
  calls.fetch_add(1, std::memory_order_relaxed);
}

const queued_event& as_queued(const event& e) {
  auto* q = dynamic_cast<const queued_event*>(&e);
  if (q == nullptr) throw error("stream: the event belongs to another kind of device");
  return *q;
}

} // namespace

// --- stream_backend --------------------------------------------------------------------

stream::work_span stream_backend::take_span(marker begin, marker end) {
  drop_span(begin, end);
  throw error(describe() + " keeps no device clock");
}

void stream_backend::drop_span(marker begin, marker end) {
  if (begin != nullptr) release(begin);
  if (end != nullptr) release(end);
}

// --- stream_record ---------------------------------------------------------------------

stream_record::~stream_record() {
  if (marker_ != nullptr) backend_->release(marker_);
}

void stream_record::reach(stream_backend::marker m, bool failed) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    marker_ = m;
    failed_.store(failed || m == nullptr, std::memory_order_release);
    reached_.store(true, std::memory_order_release);
  }
  reached_cv_.notify_all();
}

bool stream_record::wait_reached() const {
  return *wait_reached_until(std::chrono::steady_clock::time_point::max());
}

std::optional<bool> stream_record::wait_reached_until(std::chrono::steady_clock::time_point deadline) const {
  static const std::atomic<bool> never{false};
  return wait_reached_unless(never, deadline);
}

std::optional<bool> stream_record::wait_reached_unless(const std::atomic<bool>& give_up,
                                                       std::chrono::steady_clock::time_point deadline) const {
  if (reached()) return true;
  std::unique_lock<std::mutex> lock(mutex_);
  // Bounded waits: a stop of the recording stream (or of the waiter) sets its flag without
  // this mutex.
  while (!reached() && !stopped_->load()) {
    if (give_up.load() || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    reached_cv_.wait_for(lock, std::chrono::milliseconds(1));
  }
  return reached();
}

bool stream_record::query() const {
  if (stopped_->load()) return true;
  if (!reached()) return false;
  if (marker_ == nullptr) return true; // failed or dropped before anything was recorded
  std::string message;
  switch (backend_->query(marker_, message)) {
    case stream_backend::state::pending: return false;
    case stream_backend::state::done: return true;
    case stream_backend::state::failed: {
      std::lock_guard<std::mutex> guard(mutex_);
      if (device_error_.empty())
        device_error_ = "the device failed work of " + backend_->describe() + ": " + message;
      return true;
    }
  }
  return true;
}

bool stream_record::synchronize() const {
  return *synchronize_until(std::chrono::steady_clock::time_point::max());
}

std::optional<bool> stream_record::synchronize_until(std::chrono::steady_clock::time_point deadline) const {
  const std::optional<bool> reached = wait_reached_until(deadline);
  if (!reached) return std::nullopt;
  if (!*reached || marker_ == nullptr) return false;
  // Poll rather than block in the device runtime: a stop (a dead peer, a destroyed
  // executor) must end the wait even when the device never finishes.
  if (!spin_until(std::chrono::microseconds(50), [this] { return query(); }))
    while (!query()) {
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  return !failed() && device_error().empty();
}

std::string stream_record::device_error() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return device_error_;
}

// --- queued_event ----------------------------------------------------------------------

std::shared_ptr<stream_record> queued_event::current() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return current_;
}

void queued_event::set(std::shared_ptr<stream_record> r) {
  std::lock_guard<std::mutex> guard(mutex_);
  current_ = std::move(r);
}

bool queued_event::query() const {
  auto r = current();
  return r == nullptr || r->query();
}

bool queued_event::synchronize() const {
  auto r = current();
  return r == nullptr || r->synchronize();
}

// --- queued_stream ---------------------------------------------------------------------

queued_stream::queued_stream(place where, stream_kind kind, std::shared_ptr<stream_backend> backend)
    : place_(where), kind_(kind), backend_(std::move(backend)) {
  std::promise<void> started;
  auto ready = started.get_future();
  thread_ = std::thread([this, &started] { run(&started); });
  try {
    ready.get(); // the backend started, or its start failed
  } catch (...) {
    stopped_->store(true);
    thread_.join();
    throw;
  }
}

queued_stream::~queued_stream() {
  stop();
}

void queued_stream::request_stop() {
  if (!stopped_->exchange(true)) {
    std::lock_guard<spin_mutex> guard(mutex_);
    wakeup_.notify_all();
  }
}

void queued_stream::stop() {
  const bool first = !profiled_stop_.exchange(true);
  request_stop();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  if (first && host_profiling()) std::fprintf(stderr, "%s\n", profile_line().c_str());
  std::deque<item> dropped;
  {
    std::lock_guard<spin_mutex> guard(mutex_);
    dropped.swap(queue_);
  }
  // Records never reached count as failed, so that their waiters return.
  for (item& it : dropped)
    if (it.type == item::what::record || it.type == item::what::drain) it.rec->reach(nullptr, true);
  drop_spans();
}

void queued_stream::push(item it) {
  {
    std::lock_guard<spin_mutex> guard(mutex_);
    if (stopped_->load()) {
      if (it.type == item::what::record || it.type == item::what::drain) it.rec->reach(nullptr, true);
      return; // a stopped stream drops work, as it dropped what was queued
    }
    if (it.type != item::what::drain) enqueued_.fetch_add(1);
    queue_.push_back(std::move(it));
  }
  // seq_cst with run(), which sets sleeping_ and then looks at the queue under the mutex.
  if (sleeping_.load()) {
    std::lock_guard<spin_mutex> guard(mutex_);
    wakeup_.notify_one();
  }
}

void queued_stream::enqueue(task work) {
  item it;
  it.work = std::move(work);
  push(std::move(it));
}

void queued_stream::enqueue_always(std::function<void(bool failed)> work) {
  item it;
  it.type = item::what::always;
  it.always = std::move(work);
  push(std::move(it));
}

void queued_stream::enqueue_timed(task work, span_sink timed) {
  item it;
  it.work = std::move(work);
  it.timed = std::move(timed);
  push(std::move(it));
}

void queued_stream::enqueue_always_timed(std::function<void(bool failed)> work, span_sink timed) {
  item it;
  it.type = item::what::always;
  it.always = std::move(work);
  it.timed = std::move(timed);
  push(std::move(it));
}

std::shared_ptr<stream_record> queued_stream::new_record() {
  return std::make_shared<stream_record>(backend_, stopped_);
}

void queued_stream::record(event& e) {
  auto& q = const_cast<queued_event&>(as_queued(e));
  item it;
  it.type = item::what::record;
  it.rec = new_record();
  q.set(it.rec); // before the push: a wait enqueued after this call sees this record
  push(std::move(it));
}

void queued_stream::wait(const event& e) {
  auto r = as_queued(e).current();
  if (r == nullptr) return; // never recorded: complete
  item it;
  it.type = item::what::wait;
  it.rec = std::move(r); // the record as it is now: a later record() does not move this wait
  push(std::move(it));
}

std::shared_ptr<stream_record> queued_stream::push_drain() {
  item it;
  it.type = item::what::drain;
  it.rec = new_record();
  auto r = it.rec;
  push(std::move(it));
  return r;
}

bool queued_stream::after_drain(const stream_record& r, bool ok) {
  if (!ok && !r.device_error().empty()) fail({r.device_error(), pe::error_kind::ordinary});
  resolve_spans(); // the device passed every span enqueued before: their sinks are told now
  return ok && !stopped_->load();
}

bool queued_stream::synchronize() {
  const auto r = push_drain();
  return after_drain(*r, r->synchronize());
}

std::optional<bool> queued_stream::synchronize_for(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const auto r = push_drain();
  const std::optional<bool> ok = r->synchronize_until(deadline);
  if (!ok) return std::nullopt;
  return after_drain(*r, *ok);
}

std::optional<std::string> queued_stream::error() const {
  return failure_.message();
}

pe::error_kind queued_stream::error_kind() const {
  return failure_.kind();
}

void queued_stream::clear_error() {
  failure_.clear();
}

std::string queued_stream::profile_line() const {
  const auto part = [](const char* what, const std::atomic<std::uint64_t>& ns,
                       const std::atomic<std::uint64_t>& n) {
    char text[160];
    const double us = static_cast<double>(ns.load()) / 1e3;
    std::snprintf(text, sizeof text, " %s %.0f us in %llu (%.2f us each)", what, us,
                  static_cast<unsigned long long>(n.load()), n.load() > 0 ? us / static_cast<double>(n.load()) : 0.0);
    return std::string(text);
  };
  return "stream profile: " + backend_->describe() + ":" +
         part("launch code", profile_.launch_ns, profile_.launches) + ";" +
         part("blocked on other streams", profile_.blocked_ns, profile_.waits) + ";" +
         part("device calls", profile_.device_call_ns, profile_.device_calls);
}

void queued_stream::fail(failure why) {
  failure_.record(0, std::move(why));
}

void queued_stream::execute(item& it) {
  switch (it.type) {
    case item::what::record:
    case item::what::drain: {
      // A drain records even on a failed stream: the device still runs what was launched
      // before the failure, and whoever synchronizes (run() after a failed step, then
      // host_value, a checkpoint, the next step) must not read or reuse its memory before
      // that has ended. A plain record on a failed stream marks nothing.
      const bool drain = it.type == item::what::drain;
      if (!drain && failure_.failed()) {
        it.rec->reach(nullptr, true);
        return;
      }
      stream_backend::marker m = nullptr;
      const std::int64_t since = host_profiling() ? steady_ns() : 0;
      try {
        m = backend_->record();
        if (since != 0) count(profile_.device_call_ns, profile_.device_calls, since);
      } catch (const std::exception& x) {
        fail({x.what(), pe::error_kind::ordinary});
      }
      it.rec->reach(m, drain && failure_.failed()); // failed as well when m is null
      return;
    }
    case item::what::wait: {
      if (failure_.failed()) return; // poisoned already: nothing after this runs anyway
      std::int64_t since = host_profiling() ? steady_ns() : 0;
      // Until the record is made, or this stream stops: a stop must not wait for another
      // stream's work (it may never come).
      const std::optional<bool> reached = it.rec->wait_reached_unless(*stopped_);
      if (!reached) return; // stopped: the item is dropped as queued ones are
      if (since != 0) {
        count(profile_.blocked_ns, profile_.waits, since);
        since = steady_ns();
      }
      if (!*reached || it.rec->failed()) {
        fail(waited_on_failed_work(it.rec->origin()));
        return;
      }
      try {
        backend_->wait(it.rec->handle());
        if (since != 0) count(profile_.device_call_ns, profile_.device_calls, since);
      } catch (const std::exception& x) {
        fail({x.what(), pe::error_kind::ordinary});
      }
      return;
    }
    case item::what::work:
    case item::what::always:
      run_stream_work(failure_, 0, it.type == item::what::always, [&](bool failed) {
        run_work(it, failed);
        return true;
      });
      return;
  }
}

void queued_stream::run_work(item& it, bool failed) {
  std::int64_t launch_start = 0, launch_end = 0;
  const auto work = [&] {
    if (host_profiling() || it.timed) launch_start = steady_ns();
    if (it.type == item::what::work) it.work();
    else it.always(failed);
    if (launch_start != 0) launch_end = steady_ns();
    if (host_profiling()) {
      profile_.launch_ns.fetch_add(static_cast<std::uint64_t>(launch_end - launch_start), std::memory_order_relaxed);
      profile_.launches.fetch_add(1, std::memory_order_relaxed);
    }
  };
  if (!it.timed) return work();
  stream_backend::marker begin = backend_->record_timed();
  if (begin == nullptr) return run_timed_on_host(work, it.timed); // no device clock
  stream_backend::marker end = nullptr;
  try {
    work();
    end = backend_->record_timed();
  } catch (...) {
    backend_->drop_span(begin, end);
    throw;
  }
  std::lock_guard<std::mutex> guard(spans_mutex_);
  spans_.push_back({begin, end, launch_start, launch_end, std::move(it.timed)});
  spans_pending_.store(true);
}

void queued_stream::resolve_spans() {
  if (!spans_pending_.load()) return;
  // One resolver at a time, sinks included, so that synchronize() returns only once every
  // span before it was told, also one the stream's thread had just taken.
  std::lock_guard<std::mutex> resolving(resolve_mutex_);
  for (;;) {
    pending_span p;
    work_span span;
    {
      std::lock_guard<std::mutex> guard(spans_mutex_);
      if (spans_.empty()) {
        spans_pending_.store(false);
        return;
      }
      std::string message;
      const stream_backend::state state = backend_->query(spans_.front().end, message);
      if (state == stream_backend::state::pending) return;
      p = std::move(spans_.front());
      spans_.pop_front();
      if (state == stream_backend::state::failed) { // the failure reaches the host elsewhere
        backend_->drop_span(p.begin, p.end);
        continue;
      }
      try {
        span = backend_->take_span(p.begin, p.end);
        span.launch_start_ns = p.launch_start_ns;
        span.launch_end_ns = p.launch_end_ns;
      } catch (const std::exception& x) {
        fail({x.what(), pe::error_kind::ordinary});
        continue;
      }
    }
    p.timed(span); // outside the lock: a sink may take locks of its own
  }
}

void queued_stream::drop_spans() {
  std::lock_guard<std::mutex> guard(spans_mutex_);
  for (pending_span& p : spans_) backend_->drop_span(p.begin, p.end);
  spans_.clear();
  spans_pending_.store(false);
}

void queued_stream::run(std::promise<void>* started) {
  try {
    backend_->start();
  } catch (...) {
    started->set_exception(std::current_exception());
    return;
  }
  started->set_value();

  while (!stopped_->load()) {
    item it;
    bool have = false;
    {
      std::lock_guard<spin_mutex> guard(mutex_);
      if (!queue_.empty()) {
        it = std::move(queue_.front());
        queue_.pop_front();
        have = true;
      }
    }
    if (have) {
      execute(it);
      const bool counted = it.type != item::what::drain;
      it = item(); // what it captured is dropped after its launch code ran, before it counts
      if (counted) completed_.fetch_add(1);
      resolve_spans();
      continue;
    }
    const bool busy = spin_until(idle_spin, [this] {
      if (stopped_->load()) return true;
      {
        std::lock_guard<spin_mutex> guard(mutex_);
        if (!queue_.empty()) return true;
      }
      resolve_spans();
      return false;
    });
    if (busy || stopped_->load()) continue;
    sleeping_.store(true);
    {
      // While spans are pending the thread naps, to look at the device again.
      std::unique_lock<spin_mutex> lock(mutex_);
      const auto woken = [this] { return !queue_.empty() || stopped_->load(); };
      if (spans_pending_.load()) wakeup_.wait_for(lock, span_poll, woken);
      else wakeup_.wait(lock, woken);
    }
    sleeping_.store(false);
    resolve_spans();
  }
}

} // namespace pe

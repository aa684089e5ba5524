#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "core/spin_mutex.hpp"
#include "devices/first_failure.hpp"
#include "devices/stream.hpp"

namespace pe {

class cpu_device;
class cpu_stream;

/// An event of a CPU stream: the stream and the ticket of the last work item it captured.
class cpu_event final : public event {
 public:
  bool query() const override;
  bool synchronize() const override;
  bool when_done(std::function<void()> then) const override;
  bool calls_back() const override { return true; }

 private:
  friend class cpu_stream;
  std::atomic<cpu_stream*> stream_{nullptr}; // nullptr: never recorded
  std::atomic<std::uint64_t> ticket_{0};
};

/// One in-order queue of a CPU device. It has no thread of its own: its device's thread runs
/// the heads of all the device's streams in turn (see cpu_device), so a stream is a FIFO
/// plus the bookkeeping that makes events work.
///
/// Every item gets a ticket 1, 2, ... in enqueue order; the stream publishes the ticket of
/// the last finished item. An event is (stream, ticket): complete when that ticket has
/// finished, failed when the stream's first failure since clear_error() is at or before it.
class cpu_stream final : public stream {
 public:
  cpu_stream(cpu_device& owner, stream_kind kind);
  cpu_stream(const cpu_stream&) = delete;
  cpu_stream& operator=(const cpu_stream&) = delete;

  place where() const override;
  stream_kind kind() const override { return kind_; }
  void enqueue(task work) override;
  void enqueue_always(std::function<void(bool failed)> work) override;
  void record(event& e) override;
  void wait(const event& e) override;
  bool synchronize() override;
  std::optional<bool> synchronize_for(std::chrono::milliseconds limit) override;
  item_counts counts() const override { return {enqueued_.load(), completed_.load()}; }
  std::optional<std::string> error() const override;
  pe::error_kind error_kind() const override;
  void clear_error() override;

  /// The device thread polls the work at the head of this stream; between polls it parks
  /// until progress and runs the place's other streams.
  void enqueue_polled(polled_task work) override;

  /// For the device thread: makes progress on the head item if it can (runs it, or finds
  /// its wait satisfied). False when the stream is empty or its head must wait.
  bool step();

  /// For the device thread: whether step() could make progress now.
  bool ready() const;

  /// Flags the stream stopped: no more work runs or is queued, host waiters return, waits
  /// on it fail. Idempotent.
  void stop();

  /// Destroys the queued work; call once the device thread has ended.
  void drop_queue();

  /// Calls `then` once `ticket` has finished, or the stream stopped: now, on the calling
  /// thread, when it already has; else on the thread that finishes it (unlocked).
  void call_when_finished(std::uint64_t ticket, std::function<void()> then);

 private:
  friend class cpu_event;
  struct item {
    std::uint64_t ticket = 0;
    task work;                     // plain work; skipped after a failure
    polled_task polled;            // runs even after a failure, until it returns true
    cpu_stream* wait_on = nullptr; // a wait: the stream and ticket it waits for
    std::uint64_t wait_ticket = 0;
    bool parked = false;           // polled and pending: not polled again before progress
    std::uint64_t parked_at = 0;   // the progress epoch it was parked in
  };

  /// Whether the head can make progress; call with mutex_ held.
  bool head_ready() const;

  void push(item it);
  /// step() for polled work at the head; called and returns with mutex_ held.
  bool step_polled();
  /// Runs or checks the head; true when it is finished and may be popped.
  bool execute(item& it);
  void finish(std::uint64_t ticket);
  /// Blocks the calling host thread until `ticket` finished or the stream stopped; true when
  /// it finished without failure.
  bool wait_for(std::uint64_t ticket) const;
  /// wait_for() that gives up after `limit`: nullopt when `ticket` has not finished by then.
  std::optional<bool> wait_for(std::uint64_t ticket, std::chrono::milliseconds limit) const;
  bool failed_at_or_before(std::uint64_t ticket) const;
  bool finished(std::uint64_t ticket) const;
  void fail(std::uint64_t ticket, failure why);
  /// Runs the callbacks of call_when_finished that are due (all of them once stopped).
  void run_due_callbacks();

  cpu_device& owner_;
  stream_kind kind_;

  // A spin_mutex: the device thread polls the queue while the host pushes into it, and a
  // std::mutex put one of them to sleep at every meeting (core/spin_mutex.hpp).
  mutable spin_mutex mutex_;
  mutable std::condition_variable_any finished_; // host threads wait for completed_
  std::deque<item> queue_;                   // the device thread reads the front unlocked
  std::atomic<std::uint64_t> enqueued_{0};   // written under mutex_
  std::atomic<std::uint64_t> completed_{0};
  first_failure failure_; // at the ticket of the failed item
  std::atomic<bool> stopping_{false};
  mutable std::atomic<int> waiters_{0};  // host threads blocked in wait_for
  std::atomic<int> watchers_{0};         // waits of other streams stuck on this one
  struct callback {
    std::uint64_t ticket;
    std::function<void()> then;
  };
  std::vector<callback> callbacks_;      // guarded by mutex_
  std::atomic<int> pending_callbacks_{0}; // callbacks_.size(), read by finish() unlocked
};

} // namespace pe

#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "devices/stream.hpp"

namespace pe {

class cpu_stream;

/// An event of a CPU stream: the stream and the ticket of the last work item it captured.
class cpu_event final : public event {
 public:
  bool query() const override;
  bool synchronize() const override;

 private:
  friend class cpu_stream;
  std::atomic<cpu_stream*> stream_{nullptr}; // nullptr: never recorded
  std::atomic<std::uint64_t> ticket_{0};
};

/// A CPU stream: a FIFO of work items and one thread of its own that runs them in order.
///
/// Why a plain thread and not a CAF actor: devices/ stays free of CAF (kernels must never
/// see it), and a stream is exactly a detached actor with one behaviour, "run the next
/// item", whose mailbox is this FIFO. Owning the thread also lets it spin briefly before
/// sleeping, so back-to-back kernels do not pay a wake-up each.
///
/// Every item gets a ticket 1, 2, ... in enqueue order; the stream publishes the ticket of
/// the last finished item. An event is (stream, ticket): complete when that ticket has
/// finished, failed when the stream's first failure since clear_error() is at or before it.
class cpu_stream final : public stream {
 public:
  cpu_stream(place where, stream_kind kind);
  ~cpu_stream() override;
  cpu_stream(const cpu_stream&) = delete;
  cpu_stream& operator=(const cpu_stream&) = delete;

  place where() const override { return place_; }
  stream_kind kind() const override { return kind_; }
  void enqueue(task work) override;
  void enqueue_always(std::function<void(bool failed)> work) override;
  void record(event& e) override;
  void wait(const event& e) override;
  bool synchronize() override;
  std::optional<std::string> error() const override;
  void clear_error() override;

  /// Drops queued work, ends the thread and releases every waiter. Idempotent.
  void stop();

 private:
  friend class cpu_event;
  static constexpr std::uint64_t no_failure = ~std::uint64_t{0};

  struct item {
    std::uint64_t ticket;
    task work;                             // empty for a wait
    std::function<void(bool)> always_work; // enqueue_always
    cpu_stream* wait_on = nullptr; // a wait: the stream and ticket it waits for
    std::uint64_t wait_ticket = 0;
  };

  void push(item it);
  void run();
  void execute(item& it);
  /// Blocks until `ticket` finished on this stream or `waiter` (when given) is stopped.
  /// True when it finished without failure.
  bool wait_for(std::uint64_t ticket, const cpu_stream* waiter) const;
  bool failed_at_or_before(std::uint64_t ticket) const;
  void fail(std::uint64_t ticket, std::string message);

  place place_;
  stream_kind kind_;

  mutable std::mutex mutex_;
  mutable std::condition_variable work_ready_; // the thread waits for items
  mutable std::condition_variable finished_;   // waiters wait for completed_
  std::deque<item> queue_;
  std::atomic<std::uint64_t> enqueued_{0}; // written under mutex_; read lock-free by the idle spin
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> failed_at_{no_failure};
  std::optional<std::string> error_; // guarded by mutex_
  std::atomic<bool> stopping_{false};
  mutable std::atomic<int> waiters_{0};
  std::thread thread_;
};

} // namespace pe

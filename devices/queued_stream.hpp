#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/spin_mutex.hpp"
#include "devices/first_failure.hpp"
#include "devices/stream.hpp"

namespace pe {

/// The device side of a queued_stream: what a CUDA stream does (cudaEventRecord,
/// cudaStreamWaitEvent, cudaEventQuery), behind plain C++ so that the stream's host logic
/// is tested with a fake device on machines without a GPU. Markers are opaque handles
/// (a cudaEvent_t); every call but query and release comes from the stream's own thread.
class stream_backend {
 public:
  using marker = void*;
  enum class state { done, pending, failed };

  virtual ~stream_backend() = default;

  /// Runs first, on the stream's thread (a CUDA backend makes its device current there and
  /// creates its stream). Throws pe::error when the device cannot be used.
  virtual void start() {}

  /// A marker after all device work submitted on this stream so far. Throws pe::error.
  virtual marker record() = 0;

  /// Makes device work submitted later on this stream wait for `m`, a marker of any
  /// backend of the same kind. Throws pe::error.
  virtual void wait(marker m) = 0;

  /// Whether the device finished the work before `m` (any thread; never blocks). On
  /// failed, `message` says what the device reported.
  virtual state query(marker m, std::string& message) = 0;

  /// `m` is no longer needed (any thread).
  virtual void release(marker m) = 0;

  /// A marker that the device also stamps with its clock when it reaches it, for timing
  /// device work; null when this backend keeps no device clock (the stream then times the
  /// launch code on the host). Throws pe::error.
  virtual marker record_timed() { return nullptr; }

  /// Once query(end) said done: when the device reached the timed markers `begin` and
  /// `end` (recorded in that order on this stream), in steady-clock nanoseconds. Takes
  /// both markers (no release() for them). Any thread. Throws pe::error.
  virtual stream::work_span take_span(marker begin, marker end);

  /// Takes timed markers whose span is not wanted (failed or dropped work); `end` may be
  /// null. Any thread.
  virtual void drop_span(marker begin, marker end);

  /// "the compute stream of gpu:0", for messages.
  virtual std::string describe() const = 0;
};

/// One record() on a queued_stream: reached once the stream's thread got to it (the
/// backend's marker is then after all work launched before it, or the stream had failed
/// or stopped and nothing was recorded). Waits and synchronizations hold the record they
/// captured, so a later record() of the same event never moves them: each record has a
/// marker of its own, which is what Paddle's one-event-per-(op, step slot) is for.
class stream_record {
 public:
  stream_record(std::shared_ptr<stream_backend> backend, std::shared_ptr<std::atomic<bool>> stopped)
      : backend_(std::move(backend)), stopped_(std::move(stopped)) {}
  ~stream_record();
  stream_record(const stream_record&) = delete;
  stream_record& operator=(const stream_record&) = delete;

  /// For the stream's thread: the marker was recorded (`m` non-null), or the captured work
  /// failed or was dropped (`m` null).
  void reach(stream_backend::marker m, bool failed);

  bool reached() const { return reached_.load(std::memory_order_acquire); }

  /// Blocks until reach() or until the recording stream stops; true when reached.
  bool wait_reached() const;

  /// wait_reached() that gives up at `deadline`: nullopt when neither happened by then.
  std::optional<bool> wait_reached_until(std::chrono::steady_clock::time_point deadline) const;

  /// wait_reached() that also gives up (nullopt) once `give_up` is set: a waiting stream's
  /// own stop.
  std::optional<bool> wait_reached_unless(
      const std::atomic<bool>& give_up,
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) const;

  /// The captured work failed (or its stream stopped before reaching the record).
  bool failed() const { return failed_.load(std::memory_order_acquire) || stopped_->load(); }

  /// The marker; null when failed, except for a drain's (after the work of a failed
  /// stream). Valid once reached().
  stream_backend::marker handle() const { return marker_; }

  /// "the compute stream of gpu:0".
  std::string origin() const { return backend_->describe(); }

  /// Non-blocking: reached and (stopped, failed before anything was recorded, or the device
  /// finished the work).
  bool query() const;

  /// Blocks (polling, so that a stop ends it) until the work finished; false when it
  /// failed, its stream stopped, or the device reported an error (kept in device_error()).
  bool synchronize() const;

  /// synchronize() that gives up at `deadline`: nullopt when the record was not reached or
  /// the device had not finished the work by then (a stall watch's wait).
  std::optional<bool> synchronize_until(std::chrono::steady_clock::time_point deadline) const;

  /// What the device reported to query() or synchronize(), else empty.
  std::string device_error() const;

 private:
  std::shared_ptr<stream_backend> backend_;
  std::shared_ptr<std::atomic<bool>> stopped_;
  mutable std::mutex mutex_;
  mutable std::condition_variable reached_cv_;
  std::atomic<bool> reached_{false};
  std::atomic<bool> failed_{false};
  stream_backend::marker marker_ = nullptr;
  mutable std::string device_error_; // guarded by mutex_
};

/// A pe::event of queued streams: the latest record made of it (none: complete).
class queued_event final : public event {
 public:
  bool query() const override;
  bool synchronize() const override;

  /// The latest record, or null when never recorded.
  std::shared_ptr<stream_record> current() const;
  void set(std::shared_ptr<stream_record> r);

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<stream_record> current_;
};

/// A stream whose host thread runs, in enqueue order, the launch code of its tasks, its
/// records and its waits, while a backend (a CUDA stream) orders the device work.
///
/// Why a host thread per stream: enqueue() must never block its caller, a CAF worker, and
/// launch code may block for a while (a copy from pageable memory, a cuBLAS call that
/// allocates its workspace, a collective waiting for the other ranks to join). The thread
/// keeps the CPU stream's semantics exact: a throwing task fails the stream and later
/// tasks are skipped; a wait on failed work fails the waiting stream; enqueue_always runs
/// anyway. Device-side ordering is the backend's (cudaEventRecord, cudaStreamWaitEvent),
/// so the host waits for the device only in synchronize(). An idle thread spins briefly
/// (yielding) before it sleeps, so back-to-back launches do not pay a wake-up.
///
/// Timed work (enqueue_timed) is bracketed by two timed markers; the span is read from the
/// device clock once the device passed the second, by the stream's thread polling between
/// items (it naps instead of sleeping while spans are pending) or by synchronize(), so
/// neither a CAF worker nor the launch code ever blocks on the device for it.
///
/// With PE_STREAM_PROFILE=1 in the environment, each stream prints when it stops where its
/// thread spent its time: launch code, blocked on another stream's thread (a wait whose
/// record that thread had not reached), and the backend's record and wait calls.
class queued_stream : public stream {
 public:
  /// Starts the thread and the backend on it; throws what backend->start() threw.
  queued_stream(place where, stream_kind kind, std::shared_ptr<stream_backend> backend);
  ~queued_stream() override;
  queued_stream(const queued_stream&) = delete;
  queued_stream& operator=(const queued_stream&) = delete;

  place where() const override { return place_; }
  stream_kind kind() const override { return kind_; }
  void enqueue(task work) override;
  void enqueue_always(std::function<void(bool failed)> work) override;
  void enqueue_timed(task work, span_sink timed) override;
  void enqueue_always_timed(std::function<void(bool failed)> work, span_sink timed) override;
  void record(event& e) override;
  void wait(const event& e) override;
  bool synchronize() override;
  /// synchronize() that gives up after `limit` (nullopt), so that a stall watch sees a GPU
  /// stream that never finishes: its host thread stuck in launch code, or the device in a
  /// kernel. Each call enqueues a drain of its own, as synchronize() does.
  std::optional<bool> synchronize_for(std::chrono::milliseconds limit) override;
  /// Items enqueued, and items the stream's thread has run (launched: the device may still
  /// be running their work), for the stall watch and its reports. Not the drains of
  /// synchronize() and synchronize_for(): a watch that waits with a drain per look would
  /// otherwise count its own waiting as progress.
  item_counts counts() const override { return {enqueued_.load(), completed_.load()}; }
  std::optional<std::string> error() const override;
  pe::error_kind error_kind() const override;
  void clear_error() override;

  /// Drops queued work, ends waits on this stream and joins the thread. Idempotent.
  void stop();

  /// The first half of stop(), which does not wait: flags the stream stopped, so that its
  /// thread and every wait on it end. A device stops all its streams this way before it
  /// joins any (a task on one may be waiting for a sibling). Idempotent.
  void request_stop();

  stream_backend& backend() const { return *backend_; }

 private:
  struct item {
    /// drain: synchronize()'s record, made even on a failed stream (see execute()).
    enum class what { work, always, record, wait, drain } type = what::work;
    task work;
    std::function<void(bool failed)> always;
    span_sink timed;                    // work, always: told the device span
    std::shared_ptr<stream_record> rec; // record: the one to reach; wait: the one waited for
  };
  /// Timed work launched, its span still to be read from the device.
  struct pending_span {
    stream_backend::marker begin = nullptr, end = nullptr;
    std::int64_t launch_start_ns = 0, launch_end_ns = 0;
    span_sink timed;
  };
  /// Where the stream's thread spent its time (PE_STREAM_PROFILE=1; printed by stop()):
  /// nanoseconds and counts, written by the thread only.
  struct host_profile {
    std::atomic<std::uint64_t> launch_ns{0}, launches{0};
    std::atomic<std::uint64_t> blocked_ns{0}, waits{0}; // a wait for another stream's thread
    std::atomic<std::uint64_t> device_call_ns{0}, device_calls{0}; // record, wait, timed markers
  };

  void push(item it);
  void run(std::promise<void>* started);
  void execute(item& it);
  void run_work(item& it, bool failed);
  /// Tells the sinks of the pending spans whose work the device finished, in order.
  void resolve_spans();
  void drop_spans();
  void fail(failure why);
  /// One line of host_profile for stderr.
  std::string profile_line() const;
  std::shared_ptr<stream_record> new_record();
  /// Enqueues a drain (synchronize()'s record) and returns its record.
  std::shared_ptr<stream_record> push_drain();
  /// What synchronize() returns once drain `r` finished with `ok`: a device error fails the
  /// stream, the spans the device passed are told.
  bool after_drain(const stream_record& r, bool ok);

  place place_;
  stream_kind kind_;
  std::shared_ptr<stream_backend> backend_;
  std::shared_ptr<std::atomic<bool>> stopped_ = std::make_shared<std::atomic<bool>>(false);

  // A spin_mutex, as the CPU streams' (core/spin_mutex.hpp): this stream's thread polls the
  // queue under it while the host pushes launches into it.
  mutable spin_mutex mutex_;
  std::condition_variable_any wakeup_;
  std::deque<item> queue_; // guarded by mutex_
  std::atomic<std::uint64_t> enqueued_{0}; // written under mutex_
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<bool> sleeping_{false};
  first_failure failure_; // items are not numbered: every failure is at position 0
  std::mutex resolve_mutex_; // held by resolve_spans(), across its sinks
  std::mutex spans_mutex_;
  std::deque<pending_span> spans_; // guarded by spans_mutex_
  std::atomic<bool> spans_pending_{false};
  host_profile profile_;
  std::atomic<bool> profiled_stop_{false}; // stop() ran (its profile line printed once)
  std::thread thread_;
};

} // namespace pe

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/place.hpp"
#include "core/steady_clock.hpp"

namespace pe {

/// The streams every place has: kernels on `compute`, collectives on `communication`,
/// transfers to and from the host on `copy`. Work on one stream runs in enqueue order;
/// work on different streams is ordered only through events.
enum class stream_kind { compute, communication, copy };

/// "compute", "communication", "copy".
std::string to_string(stream_kind kind);

/// A marker in a stream, with CUDA's semantics:
/// - stream::record(e) captures the work enqueued on that stream so far, replacing what
///   e captured before;
/// - stream::wait(e) makes later work on the waiting stream wait for what e captured at
///   the moment the wait was enqueued (a later record does not change that wait);
/// - an event never recorded counts as complete.
/// Record and wait are called by the host; the device does the waiting.
class event {
 public:
  virtual ~event() = default;

  /// Whether the captured work has finished (or was dropped by a failure or a stop).
  virtual bool query() const = 0;

  /// Blocks the calling thread until the captured work has finished. Returns false when
  /// that work failed (a task threw, or waited on failed work) or its stream was stopped.
  virtual bool synchronize() const = 0;

  /// Calls `then` once the captured work has finished (or failed, or its stream stopped):
  /// on the calling thread when it already has, else on the thread that finishes it, which
  /// may be a device's own thread: `then` must be short and must not block. Returns false,
  /// without calling `then`, where this kind of event cannot (a GPU's, whose completion the
  /// host only learns by asking): the caller then orders its work with stream::wait alone.
  ///
  /// Why: a CPU place's streams share one thread, so a wait at the head of its compute
  /// stream holds every kernel queued behind it; work that must wait for another stream is
  /// better enqueued once that stream is done (see actors/op_actor.cpp).
  virtual bool when_done(std::function<void()> then) const {
    (void)then;
    return false;
  }

  /// Whether when_done() can call back (asked first, so that a caller pays nothing on
  /// events that cannot: a GPU event's query() is a driver call).
  virtual bool calls_back() const { return false; }
};

/// An in-order queue of work on one place.
///
/// A task that throws marks the stream failed: later tasks are skipped (their events still
/// complete, as failed) until clear_error(), and a stream that waits on an event of failed
/// work fails too. So a failure poisons everything ordered after it, on every stream,
/// without a host round trip; the host reads the first message with error() and its kind
/// with error_kind().
class stream {
 public:
  using task = std::function<void()>;

  /// A failure as a stream records it: the message error() returns and its kind.
  struct failure {
    std::string message;
    pe::error_kind kind = pe::error_kind::ordinary;
  };

  /// The failure of the exception being handled; call only inside a catch block. A
  /// pe::error keeps its kind; any other exception is an ordinary failure.
  static failure caught_failure();

  /// When a task's work ran, in steady-clock nanoseconds (core/steady_clock.hpp).
  struct work_span {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    /// When the stream's host thread ran the task's launch code (steady clock; 0 where
    /// the span above is the launch itself, as on a CPU place). On a GPU place the device span above can start long after the launch
    /// (queued behind earlier kernels) or stretch over it (the device idling while the
    /// host launches): the two together say which side set the pace.
    std::int64_t launch_start_ns = 0;
    std::int64_t launch_end_ns = 0;
  };
  /// Told a timed task's span once its work has finished; runs on the stream's thread or in
  /// synchronize(), never for work that was skipped or threw.
  using span_sink = std::function<void(const work_span&)>;

  virtual ~stream() = default;

  virtual place where() const = 0;
  virtual stream_kind kind() const = 0;

  /// Runs `work` after everything enqueued before it on this stream. On a CPU place the
  /// stream's own thread runs it; on a GPU place `work` is the host code that launches the
  /// kernels onto the stream. Never blocks the caller on earlier work.
  virtual void enqueue(task work) = 0;

  /// Like enqueue, but `work` runs even when the stream has failed, and is told so. For
  /// work that others wait for, such as a rank's part of a collective: it must take part
  /// (and spread the failure) rather than leave the other ranks waiting. Exceptions it
  /// throws fail the stream as enqueue's do.
  virtual void enqueue_always(std::function<void(bool failed)> work) = 0;

  /// Work that may take several polls: told whether the stream has failed, it returns true
  /// when finished, false to be polled again after the next notify_progress()
  /// (devices/progress.hpp). Runs even after a failure, like enqueue_always. What a
  /// collective's rank that waits for other ranks or processes is: it holds its stream,
  /// not the thread that runs it. The default polls on the stream's own thread, waiting
  /// for progress between polls (the thread runs nothing else meanwhile); a CPU stream
  /// parks the work and lets its device thread run the place's other streams.
  using polled_task = std::function<bool(bool failed)>;
  virtual void enqueue_polled(polled_task work);

  /// enqueue(), and `timed` is told when the work ran where it runs: on a CPU place the
  /// task itself (timed on the host, around it); on a GPU place the device work the task
  /// launched, between markers the device stamps before and after it, so the span is
  /// known only once the device finished (at the latest when synchronize() returns). For
  /// tracing: what happens on the device, not when the host launched it.
  virtual void enqueue_timed(task work, span_sink timed);

  /// enqueue_always() timed as enqueue_timed(); `timed` is not told when `work` threw.
  virtual void enqueue_always_timed(std::function<void(bool failed)> work, span_sink timed);

  /// Makes `e` capture the work enqueued on this stream so far.
  virtual void record(event& e) = 0;

  /// Makes work enqueued after this call wait for what `e` captured now.
  virtual void wait(const event& e) = 0;

  /// Blocks until everything enqueued so far has finished. False when any of it failed.
  virtual bool synchronize() = 0;

  /// synchronize() that gives up after `limit`: nullopt when the work enqueued so far has
  /// not finished by then, else synchronize()'s answer. What a waiter that must notice a
  /// stall uses (the executor's stall watch). The default has no timed wait and blocks as
  /// synchronize() does; the CPU stream and the queued (GPU) stream override it.
  virtual std::optional<bool> synchronize_for(std::chrono::milliseconds limit);

  /// How many items were enqueued and how many have finished, both counted from the
  /// stream's creation (never decreasing): the queue length is their difference. For stall
  /// reports and progress watches only (read without ordering); {0, 0} where a stream
  /// kind does not count.
  struct item_counts {
    std::uint64_t enqueued = 0;
    std::uint64_t completed = 0;
  };
  virtual item_counts counts() const { return {}; }

  /// The first failure since the last clear_error(): "task message", or a note that the
  /// stream waited on failed work or was stopped.
  virtual std::optional<std::string> error() const = 0;

  /// The kind of error()'s failure: consequence when the stream waited on failed work or a
  /// task threw a pe::error of that kind, else (no failure, a stop included) ordinary.
  /// A second accessor rather than error() returning a failure: every caller that prints
  /// the message keeps working, and only the one that ranks failures (the executor) asks.
  /// Both read the same first failure, which stays until clear_error().
  virtual pe::error_kind error_kind() const = 0;

  /// Lets later work run again after a failure. Call only while the stream is idle.
  virtual void clear_error() = 0;

 protected:
  /// Runs `work` on the calling thread and tells `timed` when it ran, unless it threw: the
  /// span of work whose launch code is the work itself (a CPU place, a device without a
  /// clock).
  template <class Work>
  static void run_timed_on_host(Work&& work, const span_sink& timed) {
    const std::int64_t start = steady_ns();
    work();
    timed({start, steady_ns()});
  }

};

} // namespace pe

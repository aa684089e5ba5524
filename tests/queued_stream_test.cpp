// The host side of GPU streams (devices/queued_stream.hpp) over a fake device, so the
// ordering, failure, wait and stop semantics of devices/stream.hpp are tested on machines
// without a GPU. The CUDA backend (devices/cuda/cuda_stream.hpp) only maps the four
// backend calls to cudaEventRecord, cudaStreamWaitEvent, cudaEventQuery and the event pool.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/steady_clock.hpp"
#include "devices/queued_stream.hpp"

namespace pe {
namespace {

using namespace std::chrono_literals;

/// A device whose markers finish when the test says (or at once).
struct fake_device {
  std::atomic<bool> hold{false};      // new markers stay pending until finish_all()
  std::atomic<bool> fail_start{false};
  std::atomic<bool> fail_record{false};
  std::atomic<bool> clock{false};     // timed markers are stamped (else: no device clock)
  std::atomic<int> recorded{0};
  std::atomic<int> released{0};
  std::mutex mutex;
  std::vector<struct fake_marker*> live;

  void finish_all();
};

struct fake_marker {
  std::atomic<bool> done{false};
  std::atomic<bool> broken{false};
  std::atomic<std::int64_t> stamp{0}; // timed: the steady time the "device" finished it
};

void fake_device::finish_all() {
  std::lock_guard<std::mutex> guard(mutex);
  for (fake_marker* m : live) {
    if (!m->done) m->stamp = steady_ns();
    m->done = true;
  }
}

class fake_backend final : public stream_backend {
 public:
  fake_backend(fake_device& d, std::string name) : device_(d), name_(std::move(name)) {}

  void start() override {
    if (device_.fail_start) throw error("fake device: no device");
    thread_ = std::this_thread::get_id();
  }
  marker record() override {
    if (device_.fail_record) throw error("fake device: record refused");
    auto* m = new fake_marker;
    m->done = !device_.hold.load();
    std::lock_guard<std::mutex> guard(device_.mutex);
    device_.live.push_back(m);
    ++device_.recorded;
    return m;
  }
  marker record_timed() override {
    if (!device_.clock) return nullptr;
    auto* m = static_cast<fake_marker*>(record());
    if (m->done) m->stamp = steady_ns();
    return m;
  }
  stream::work_span take_span(marker begin, marker end) override {
    const stream::work_span span{static_cast<fake_marker*>(begin)->stamp, static_cast<fake_marker*>(end)->stamp};
    release(begin);
    release(end);
    return span;
  }
  void wait(marker m) override {
    std::lock_guard<std::mutex> guard(mutex_);
    waited_.push_back(m);
  }
  state query(marker m, std::string& message) override {
    auto* f = static_cast<fake_marker*>(m);
    if (f->broken) {
      message = "illegal address";
      return state::failed;
    }
    return f->done ? state::done : state::pending;
  }
  void release(marker m) override {
    {
      std::lock_guard<std::mutex> guard(device_.mutex);
      std::erase(device_.live, static_cast<fake_marker*>(m));
    }
    delete static_cast<fake_marker*>(m);
    ++device_.released;
  }
  std::string describe() const override { return name_; }

  std::vector<marker> waited() {
    std::lock_guard<std::mutex> guard(mutex_);
    return waited_;
  }
  std::thread::id thread() const { return thread_; }

 private:
  fake_device& device_;
  std::string name_;
  std::mutex mutex_;
  std::vector<marker> waited_;
  std::thread::id thread_;
};

struct fake_stream {
  std::shared_ptr<fake_backend> backend;
  std::unique_ptr<queued_stream> stream;
};

fake_stream make(fake_device& d, const std::string& name, stream_kind kind = stream_kind::compute) {
  fake_stream s;
  s.backend = std::make_shared<fake_backend>(d, name);
  s.stream = std::make_unique<queued_stream>(place::gpu(0), kind, s.backend);
  return s;
}

TEST(QueuedStream, RunsTasksInOrderOnItsOwnThreadWithoutBlockingTheCaller) {
  fake_device dev;
  auto s = make(dev, "the compute stream of gpu:0");
  std::vector<int> order; // touched by the stream's thread only
  std::atomic<bool> other_thread{true};
  const auto caller = std::this_thread::get_id();
  const auto before = std::chrono::steady_clock::now();
  s.stream->enqueue([] { std::this_thread::sleep_for(100ms); });
  for (int i = 0; i < 1000; ++i)
    s.stream->enqueue([&, i] {
      order.push_back(i);
      if (std::this_thread::get_id() == caller) other_thread = false;
    });
  EXPECT_LT(std::chrono::steady_clock::now() - before, 50ms);
  ASSERT_TRUE(s.stream->synchronize());
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  EXPECT_TRUE(other_thread);
  EXPECT_EQ(s.stream->where(), place::gpu(0));
}

TEST(QueuedStream, AThrowingTaskFailsItsStreamSkipsLaterWorkAndFailsWaiters) {
  fake_device dev;
  auto a = make(dev, "the compute stream of gpu:0");
  auto b = make(dev, "the communication stream of gpu:0", stream_kind::communication);
  std::atomic<bool> later_ran{false}, always_failed{false}, waiter_ran{false};
  a.stream->enqueue([] { throw error("kernel exploded"); });
  a.stream->enqueue([&] { later_ran = true; });
  a.stream->enqueue_always([&](bool failed) { always_failed = failed; });
  queued_event e;
  a.stream->record(e);
  b.stream->wait(e);
  b.stream->enqueue([&] { waiter_ran = true; });
  EXPECT_FALSE(a.stream->synchronize());
  EXPECT_FALSE(b.stream->synchronize());
  EXPECT_FALSE(e.synchronize());
  EXPECT_TRUE(e.query()); // failed work counts as finished
  EXPECT_FALSE(later_ran);
  EXPECT_TRUE(always_failed);
  EXPECT_FALSE(waiter_ran);
  EXPECT_EQ(a.stream->error().value_or(""), "kernel exploded");
  EXPECT_EQ(a.stream->error_kind(), error_kind::ordinary);
  EXPECT_EQ(b.stream->error().value_or(""), "waited on failed work of the compute stream of gpu:0");
  EXPECT_EQ(b.stream->error_kind(), error_kind::consequence);
  EXPECT_TRUE(b.backend->waited().empty()); // nothing was asked of the device

  a.stream->clear_error();
  b.stream->clear_error();
  EXPECT_FALSE(a.stream->error().has_value());
  EXPECT_EQ(b.stream->error_kind(), error_kind::ordinary);
  a.stream->enqueue([&] { later_ran = true; });
  EXPECT_TRUE(a.stream->synchronize());
  EXPECT_TRUE(later_ran);
}

// A task that throws a pe::error of the consequence kind (an op whose input's writer
// failed) records that kind with its message; any other exception is an ordinary failure.
TEST(QueuedStream, AThrownErrorsKindIsTheStreamsErrorKind) {
  fake_device dev;
  auto s = make(dev, "the compute stream of gpu:0");
  s.stream->enqueue([] { throw error(error_kind::consequence, "an input's writer failed"); });
  EXPECT_FALSE(s.stream->synchronize());
  EXPECT_EQ(s.stream->error(), std::optional<std::string>("an input's writer failed"));
  EXPECT_EQ(s.stream->error_kind(), error_kind::consequence);
  s.stream->clear_error();
  EXPECT_EQ(s.stream->error_kind(), error_kind::ordinary);

  s.stream->enqueue([] { throw std::runtime_error("not a pe::error"); });
  EXPECT_FALSE(s.stream->synchronize());
  EXPECT_EQ(s.stream->error(), std::optional<std::string>("not a pe::error"));
  EXPECT_EQ(s.stream->error_kind(), error_kind::ordinary);
  s.stream->clear_error();

  s.stream->enqueue_always([](bool) { throw 42; });
  EXPECT_FALSE(s.stream->synchronize());
  EXPECT_EQ(s.stream->error(), std::optional<std::string>("unknown exception"));
  EXPECT_EQ(s.stream->error_kind(), error_kind::ordinary);
}

TEST(QueuedStream, AWaitOrdersTheDeviceOnTheRecordItSaw) {
  fake_device dev;
  auto a = make(dev, "a");
  auto b = make(dev, "b");
  std::atomic<int> stage{0}, seen_by_b{-1};
  a.stream->enqueue([&] {
    std::this_thread::sleep_for(100ms);
    stage = 1;
  });
  queued_event e;
  a.stream->record(e);
  const auto first = e.current();
  b.stream->wait(e);
  b.stream->enqueue([&] { seen_by_b = stage.load(); });
  a.stream->enqueue([&] {
    std::this_thread::sleep_for(200ms);
    stage = 2;
  });
  a.stream->record(e); // a new record: b's wait keeps the first
  EXPECT_NE(e.current(), first);
  ASSERT_TRUE(b.stream->synchronize());
  EXPECT_EQ(seen_by_b.load(), 1); // b's launch code ran after a's first record, not its second
  ASSERT_EQ(b.backend->waited().size(), 1u);
  EXPECT_EQ(b.backend->waited()[0], first->handle()); // the device waits on that marker
  EXPECT_TRUE(e.synchronize());
  EXPECT_EQ(stage.load(), 2);
}

TEST(QueuedStream, AnEventNeverRecordedIsCompleteAndAWaitOnItIsNothing) {
  fake_device dev;
  auto s = make(dev, "s");
  queued_event never;
  EXPECT_TRUE(never.query());
  EXPECT_TRUE(never.synchronize());
  s.stream->wait(never);
  EXPECT_TRUE(s.stream->synchronize());
  EXPECT_TRUE(s.backend->waited().empty());
}

TEST(QueuedStream, SynchronizeWaitsForTheDeviceNotOnlyForTheLaunches) {
  fake_device dev;
  dev.hold = true;
  auto s = make(dev, "s");
  s.stream->enqueue([] {});
  queued_event e;
  s.stream->record(e);
  std::atomic<bool> returned{false}, result{false};
  std::thread waiter([&] {
    result = s.stream->synchronize();
    returned = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(returned); // launched, but the device has not finished
  EXPECT_FALSE(e.query());
  dev.finish_all();
  waiter.join();
  EXPECT_TRUE(result);
  EXPECT_TRUE(e.query());
}

TEST(QueuedStream, SynchronizeAfterAFailureStillWaitsForTheWorkLaunchedBeforeIt) {
  // The device runs what was launched before a task threw: run() after a failed step must
  // not return (and let the caller read or reuse memory) while that is still running.
  fake_device dev;
  dev.hold = true;
  auto s = make(dev, "s");
  s.stream->enqueue([] {});
  s.stream->enqueue([] { throw error("launch refused"); });
  s.stream->enqueue([] { ADD_FAILURE() << "work after a failure ran"; });
  std::atomic<bool> returned{false}, result{true};
  std::thread waiter([&] {
    result = s.stream->synchronize();
    returned = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(returned); // failed, but the device has not finished the first launch
  dev.finish_all();
  waiter.join();
  EXPECT_FALSE(result);
  EXPECT_EQ(s.stream->error(), std::optional<std::string>("launch refused"));
}

TEST(QueuedStream, SynchronizeForGivesUpWhileTheDeviceOrTheLaunchCodeHasNotFinished) {
  // What the executor's stall watch waits with: a GPU stream whose device never finishes,
  // or whose thread is stuck in launch code, gives no answer after the limit instead of
  // blocking the watch for ever.
  fake_device dev;
  dev.hold = true;
  auto s = make(dev, "s");
  s.stream->enqueue([] {});
  auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.stream->synchronize_for(50ms).has_value()) << "the device has not finished";
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 5s);
  dev.hold = false;
  dev.finish_all();
  auto done = s.stream->synchronize_for(5000ms);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(*done);

  std::promise<void> go;
  auto released = go.get_future().share();
  s.stream->enqueue([released] { released.wait_for(5s); });
  started = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.stream->synchronize_for(50ms).has_value()) << "the launch code has not returned";
  waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 5s);
  go.set_value();
  done = s.stream->synchronize_for(5000ms);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(*done);

  s.stream->enqueue([] { throw error("launch refused"); });
  done = s.stream->synchronize_for(5000ms);
  ASSERT_TRUE(done.has_value());
  EXPECT_FALSE(*done) << "a failure is an answer, not a timeout";
  EXPECT_EQ(s.stream->error(), std::optional<std::string>("launch refused"));
}

TEST(QueuedStream, CountsWhatWasEnqueuedAndWhatItsThreadRan) {
  fake_device dev;
  auto s = make(dev, "s");
  EXPECT_EQ(s.stream->counts().enqueued, 0u);
  std::promise<void> go;
  auto released = go.get_future().share();
  s.stream->enqueue([released] { released.wait_for(5s); });
  s.stream->enqueue([] {});
  queued_event e;
  s.stream->record(e);
  std::this_thread::sleep_for(20ms);
  auto counts = s.stream->counts();
  EXPECT_EQ(counts.enqueued, 3u);
  EXPECT_EQ(counts.completed, 0u) << "the first item's launch code still runs";
  go.set_value();
  EXPECT_TRUE(s.stream->synchronize());
  EXPECT_FALSE(s.stream->synchronize_for(5000ms) == std::nullopt);
  counts = s.stream->counts();
  EXPECT_EQ(counts.enqueued, 3u) << "the waits' drains are not work";
  EXPECT_EQ(counts.completed, 3u);
}

TEST(QueuedStream, ADeviceErrorFailsSynchronizeAndNamesTheStream) {
  fake_device dev;
  dev.hold = true;
  auto s = make(dev, "the copy stream of gpu:1");
  queued_event e;
  s.stream->record(e);
  ASSERT_TRUE(e.current()->wait_reached());
  static_cast<fake_marker*>(e.current()->handle())->broken = true;
  EXPECT_FALSE(e.synchronize());
  EXPECT_EQ(e.current()->device_error(),
            "the device failed work of the copy stream of gpu:1: illegal address");
  // The stream's synchronize() sees the device's failure too, and fails the stream with it.
  const int before = dev.recorded.load();
  std::atomic<bool> result{true};
  std::thread waiter([&] { result = s.stream->synchronize(); });
  while (dev.recorded.load() == before) std::this_thread::yield();
  {
    std::lock_guard<std::mutex> guard(dev.mutex);
    for (fake_marker* m : dev.live) m->broken = true;
  }
  waiter.join();
  EXPECT_FALSE(result);
  EXPECT_EQ(s.stream->error().value_or(""),
            "the device failed work of the copy stream of gpu:1: illegal address");
  EXPECT_EQ(s.stream->error_kind(), error_kind::ordinary);
}

TEST(QueuedStream, ARecordTheDeviceRefusesFailsTheStream) {
  fake_device dev;
  auto s = make(dev, "s");
  dev.fail_record = true;
  queued_event e;
  s.stream->record(e);
  EXPECT_FALSE(e.synchronize());
  EXPECT_EQ(s.stream->error().value_or(""), "fake device: record refused");
}

TEST(QueuedStream, StopDropsQueuedWorkAndEndsEveryWait) {
  fake_device dev;
  auto a = make(dev, "a");
  auto b = make(dev, "b");
  std::atomic<bool> second_ran{false}, b_ran{false};
  a.stream->enqueue([] { std::this_thread::sleep_for(100ms); });
  a.stream->enqueue([&] { second_ran = true; });
  queued_event e;
  a.stream->record(e);
  b.stream->wait(e);
  b.stream->enqueue([&] { b_ran = true; });
  std::thread stopper([&] { a.stream->stop(); });
  EXPECT_FALSE(e.synchronize()); // returns although the record is never reached
  stopper.join();
  EXPECT_FALSE(b.stream->synchronize()); // b waited on work that was dropped
  EXPECT_FALSE(second_ran);
  EXPECT_FALSE(b_ran);
  EXPECT_NE(b.stream->error().value_or("").find("waited on failed work of a"), std::string::npos);
  EXPECT_EQ(b.stream->error_kind(), error_kind::consequence);
  a.stream->enqueue([&] { second_ran = true; }); // a stopped stream drops new work
  EXPECT_FALSE(a.stream->synchronize());
  EXPECT_FALSE(second_ran);
  a.stream->stop(); // idempotent
}

TEST(QueuedStream, ABackendThatCannotStartFailsTheConstructor) {
  fake_device dev;
  dev.fail_start = true;
  try {
    make(dev, "s");
    FAIL() << "expected pe::error";
  } catch (const error& e) {
    EXPECT_STREQ(e.what(), "fake device: no device");
  }
}

TEST(QueuedStream, EveryMarkerIsReleasedWhenItsRecordIsDropped) {
  fake_device dev;
  {
    auto s = make(dev, "s");
    queued_event e;
    for (int i = 0; i < 100; ++i) {
      s.stream->enqueue([] {});
      s.stream->record(e);
    }
    ASSERT_TRUE(s.stream->synchronize());
  }
  EXPECT_GT(dev.recorded.load(), 100);
  EXPECT_EQ(dev.released.load(), dev.recorded.load());
}

TEST(QueuedStream, TheBackendRunsOnTheStreamsThread) {
  fake_device dev;
  auto s = make(dev, "s");
  std::thread::id task_thread;
  s.stream->enqueue([&] { task_thread = std::this_thread::get_id(); });
  ASSERT_TRUE(s.stream->synchronize());
  EXPECT_EQ(task_thread, s.backend->thread());
  EXPECT_NE(task_thread, std::this_thread::get_id());
}

/// What a span sink was told, for the tests below.
struct spans_seen {
  std::mutex mutex;
  std::vector<stream::work_span> spans;
  stream::span_sink sink() {
    return [this](const stream::work_span& s) {
      std::lock_guard<std::mutex> guard(mutex);
      spans.push_back(s);
    };
  }
  std::size_t count() {
    std::lock_guard<std::mutex> guard(mutex);
    return spans.size();
  }
};

TEST(QueuedStream, ATimedSpanIsTheDevicesTimeKnownOnceTheDeviceFinished) {
  fake_device dev;
  dev.clock = true;
  dev.hold = true;
  spans_seen seen;
  std::int64_t launched = 0;
  {
    auto s = make(dev, "s");
    s.stream->enqueue_timed([&] { launched = steady_ns(); }, seen.sink());
    s.stream->enqueue_always_timed([](bool) {}, seen.sink());
    std::this_thread::sleep_for(20ms); // launched long ago; the device holds the markers
    EXPECT_EQ(seen.count(), 0u);
    const std::int64_t finished_after = steady_ns();
    dev.hold = false;
    dev.finish_all();
    ASSERT_TRUE(s.stream->synchronize()); // every span before it is told by now
    ASSERT_EQ(seen.count(), 2u);
    for (const stream::work_span& span : seen.spans) {
      EXPECT_GE(span.start_ns, finished_after); // the device's stamps, not the launch times
      EXPECT_LE(span.start_ns, span.end_ns);
      // ...which the span carries beside them: the host ran the launch code long before.
      EXPECT_GT(span.launch_start_ns, 0);
      EXPECT_LE(span.launch_start_ns, span.launch_end_ns);
      EXPECT_LT(span.launch_end_ns, finished_after);
    }
    EXPECT_LT(launched, finished_after);
    EXPECT_LE(seen.spans[0].launch_start_ns, launched);
    EXPECT_GE(seen.spans[0].launch_end_ns, launched);
    EXPECT_LE(seen.spans[0].launch_end_ns, seen.spans[1].launch_start_ns);
  }
  EXPECT_EQ(dev.released.load(), dev.recorded.load()); // 4 timed markers and the sync's
}

TEST(QueuedStream, TheStreamThreadTellsSpansWithoutASynchronize) {
  fake_device dev;
  dev.clock = true;
  spans_seen seen;
  auto s = make(dev, "s");
  dev.hold = true;
  s.stream->enqueue_timed([] {}, seen.sink());
  std::this_thread::sleep_for(10ms); // the thread has gone idle with a span pending
  dev.hold = false;
  dev.finish_all();
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (seen.count() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(seen.count(), 1u);
}

TEST(QueuedStream, WithoutADeviceClockTheLaunchCodeIsTimedOnTheHost) {
  fake_device dev; // no clock: record_timed gives null
  spans_seen seen;
  auto s = make(dev, "s");
  std::int64_t inside = 0;
  s.stream->enqueue_timed([&] {
    std::this_thread::sleep_for(5ms);
    inside = steady_ns();
  }, seen.sink());
  ASSERT_TRUE(s.stream->synchronize());
  ASSERT_EQ(seen.count(), 1u);
  EXPECT_LT(seen.spans[0].start_ns, inside);
  EXPECT_GE(seen.spans[0].end_ns, inside);
  EXPECT_GE(seen.spans[0].end_ns - seen.spans[0].start_ns, 5'000'000);
}

TEST(QueuedStream, FailedOrDroppedTimedWorkTellsNoSpanAndLeaksNoMarker) {
  fake_device dev;
  dev.clock = true;
  spans_seen seen;
  {
    auto s = make(dev, "s");
    s.stream->enqueue_timed([] { throw error("kernel exploded"); }, seen.sink());
    s.stream->enqueue_always_timed([](bool failed) { if (failed) throw error("part failed"); }, seen.sink());
    EXPECT_FALSE(s.stream->synchronize());
    EXPECT_EQ(s.stream->error().value_or(""), "kernel exploded");
    s.stream->clear_error();

    // A device failure at the end marker: the span is dropped.
    dev.hold = true;
    s.stream->enqueue_timed([] {}, seen.sink());
    s.stream->enqueue_timed([] {}, seen.sink()); // still pending when the stream stops
    std::this_thread::sleep_for(10ms);
    {
      std::lock_guard<std::mutex> guard(dev.mutex);
      ASSERT_GE(dev.live.size(), 2u);
      dev.live[1]->broken = true; // the first span's end
    }
    std::this_thread::sleep_for(10ms);
    s.stream->stop();
  }
  EXPECT_EQ(seen.count(), 0u);
  EXPECT_EQ(dev.released.load(), dev.recorded.load());
}

} // namespace
} // namespace pe

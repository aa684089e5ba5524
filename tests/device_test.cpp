// The stream and event rules of devices/stream.hpp (CUDA's semantics), one TEST per rule,
// held to both kinds of stream: the CPU device's (devices/cpu/cpu_stream, its three streams
// stepped by one device thread) and the queued streams of a GPU place (devices/queued_stream,
// a thread per stream), here over a GPU place simulated on the host
// (tests/support/host_gpu_device). One contract (devices/stream_contract.hpp), two ways of
// ordering and waiting. A CPU device's task that the test blocks holds that device: streams
// that must go on past a blocked task live on another device.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "devices/device.hpp"
#include "kernels/kernel.hpp"
#include "tests/support/host_gpu_device.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;

/// How long anything that should finish gets before the test calls it a hang.
constexpr auto limit = 2000ms;
/// How long the test lets a task that must stay blocked have to (wrongly) run.
constexpr auto race_window = 20ms;

/// A door tasks wait at until the test opens it. A task gives up after a few seconds so
/// that a broken test fails instead of hanging; pass() says whether the door opened.
class gate {
 public:
  void open() {
    std::call_once(opened_, [this] { promise_.set_value(); });
  }
  bool pass() const { return future_.wait_for(5s) == std::future_status::ready; }
  stream::task blocker() {
    return [this] {
      if (!pass()) throw error("the gate never opened");
    };
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_ = promise_.get_future().share();
  std::once_flag opened_;
};

/// Runs `wait` on a thread of its own. Its result, or nullopt when it did not return within
/// `within`; then `release` (stopping a device, opening a gate) must make it return, so
/// that no thread outlives the test.
std::optional<bool> bounded(std::function<bool()> wait, const std::function<void()>& release,
                            std::chrono::milliseconds within = limit) {
  std::packaged_task<bool()> task(std::move(wait));
  std::future<bool> result = task.get_future();
  std::thread waiter(std::move(task));
  const bool in_time = result.wait_for(within) == std::future_status::ready;
  if (!in_time) release();
  waiter.join();
  if (!in_time) return std::nullopt;
  return result.get();
}

std::optional<bool> sync(stream& s, device& d) {
  return bounded([&s] { return s.synchronize(); }, [&d] { d.stop(); });
}

std::optional<bool> sync(const event& e, device& d) {
  return bounded([&e] { return e.synchronize(); }, [&d] { d.stop(); });
}

/// Whether `done` becomes true within `within`.
bool eventually(const std::atomic<bool>& done, std::chrono::milliseconds within = limit) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!done.load()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

/// The kind of device the running test holds to the rules (set by the fixture).
place::kind tested = place::kind::cpu;

/// Place `i` of the tested kind: cpu:i, or gpu:i simulated on the host.
place tested_place(int i) {
  return tested == place::kind::cpu ? place::cpu(i) : place::gpu(i);
}

std::unique_ptr<device> open_place(int i) {
  if (tested == place::kind::cpu) return open_device(place::cpu(i));
  return std::make_unique<pe::testing::host_gpu_device>(place::gpu(i));
}

class device_rules : public ::testing::TestWithParam<place::kind> {
 protected:
  void SetUp() override { tested = GetParam(); }
};

const std::optional<bool> ok = true;
const std::optional<bool> failed = false;

/// Two CPU devices: a task the test blocks holds its own device's thread, so the streams
/// that must go on past it live on the other device.
struct two_devices {
  std::unique_ptr<device> dev0 = open_place(0);
  std::unique_ptr<device> dev1 = open_place(1);
};

/// Work that does not complete until the test opens gate `g`: dev0's compute stream `a`
/// blocked at `g`, and event `e` recorded behind the blocked task.
struct blocked_work : two_devices {
  stream& a = dev0->get_stream(stream_kind::compute);
  gate g;
  std::unique_ptr<event> e = block();

  /// Opens the gate and waits for A's work: ok when it completed.
  std::optional<bool> release() {
    g.open();
    return sync(a, *dev0);
  }

 private:
  std::unique_ptr<event> block() {
    a.enqueue(g.blocker());
    auto recorded = dev0->make_event();
    a.record(*recorded);
    return recorded;
  }
};

TEST_P(device_rules, one_stream_runs_work_in_enqueue_order) {
  auto dev = open_place(0);
  for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy}) {
    stream& s = dev->get_stream(kind);
    EXPECT_EQ(s.kind(), kind);
    EXPECT_EQ(s.where(), tested_place(0));
    std::vector<int> order; // touched only by the stream's thread until synchronize returns
    for (int i = 0; i < 1000; ++i) s.enqueue([&order, i] { order.push_back(i); });
    ASSERT_EQ(sync(s, *dev), ok) << to_string(kind);
    std::vector<int> expected(1000);
    for (int i = 0; i < 1000; ++i) expected[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(order, expected) << to_string(kind);
  }
}

TEST_P(device_rules, record_captures_the_work_enqueued_so_far) {
  auto dev = open_place(0);
  stream& s = dev->get_stream(stream_kind::compute);
  gate first, second;
  std::atomic<bool> second_done{false};
  s.enqueue(first.blocker());
  auto e = dev->make_event();
  s.record(*e);
  s.enqueue([&] {
    if (second.pass()) second_done = true;
  });

  std::this_thread::sleep_for(race_window);
  EXPECT_FALSE(e->query());
  first.open();
  EXPECT_EQ(sync(*e, *dev), ok);
  EXPECT_TRUE(e->query());
  // The event did not capture the second task, which is still blocked.
  EXPECT_FALSE(second_done.load());

  // Recording again replaces the capture: now the blocked task is in it.
  s.record(*e);
  EXPECT_FALSE(e->query());
  second.open();
  EXPECT_EQ(sync(*e, *dev), ok);
  EXPECT_TRUE(e->query());
  EXPECT_TRUE(second_done.load());
}

TEST_P(device_rules, wait_orders_later_work_after_the_captured_work) {
  two_devices d;
  stream& a = d.dev0->get_stream(stream_kind::compute);
  stream& b = d.dev1->get_stream(stream_kind::copy);
  gate g;
  std::atomic<bool> a_done{false}, b_before_ran{false}, b_ran{false}, b_saw_a{false};
  a.enqueue([&] {
    if (g.pass()) a_done = true;
  });
  auto e = d.dev0->make_event();
  a.record(*e);
  b.enqueue([&] { b_before_ran = true; });
  b.wait(*e);
  b.enqueue([&] {
    b_saw_a = a_done.load();
    b_ran = true;
  });

  // Work enqueued on B before the wait is not held back by A.
  EXPECT_TRUE(eventually(b_before_ran));
  std::this_thread::sleep_for(race_window);
  EXPECT_FALSE(b_ran.load());
  g.open();
  EXPECT_EQ(sync(b, *d.dev1), ok);
  EXPECT_TRUE(b_ran.load());
  EXPECT_TRUE(b_saw_a.load());
}

TEST_P(device_rules, wait_uses_the_capture_of_when_it_was_enqueued) {
  blocked_work w; // A blocked at the first gate, w.g
  stream& b = w.dev1->get_stream(stream_kind::communication);
  gate second;
  std::atomic<bool> second_done{false};
  b.wait(*w.e);
  std::atomic<bool> b_ran{false};
  b.enqueue([&] { b_ran = true; });
  w.a.enqueue([&] {
    if (second.pass()) second_done = true;
  });
  w.a.record(*w.e); // moves the event past the second task; B's wait must not move with it

  w.g.open();
  EXPECT_EQ(sync(b, *w.dev1), ok);
  EXPECT_TRUE(b_ran.load());
  EXPECT_FALSE(second_done.load());
  EXPECT_FALSE(w.e->query());
  second.open();
  EXPECT_EQ(sync(*w.e, *w.dev0), ok);
  EXPECT_TRUE(second_done.load());
}

TEST_P(device_rules, an_event_never_recorded_counts_as_complete) {
  blocked_work w; // busy work elsewhere that a wrong wait could get stuck behind
  stream& b = w.dev1->get_stream(stream_kind::copy);
  auto e = w.dev0->make_event();
  EXPECT_TRUE(e->query());
  EXPECT_EQ(sync(*e, *w.dev0), ok);
  b.wait(*e);
  std::atomic<bool> b_ran{false};
  b.enqueue([&] { b_ran = true; });
  EXPECT_EQ(sync(b, *w.dev1), ok);
  EXPECT_TRUE(b_ran.load());
  EXPECT_EQ(w.release(), ok);
}

// event::when_done: a CPU event calls back once its work finished (now when it has, at the
// finish on the device's thread otherwise, at the stream's stop at the latest); a GPU
// place's event says it cannot, and calls nothing.
TEST_P(device_rules, when_done_calls_back_once_the_captured_work_finished_or_says_it_cannot) {
  blocked_work w;
  std::atomic<int> calls{0};
  std::atomic<bool> work_was_done_at_call{false}, never_recorded{false};
  std::atomic<bool> work_done{false};
  w.a.enqueue([&] { work_done = true; });
  w.a.record(*w.e); // behind the blocked task and the flag's task
  const bool can = w.e->when_done([&] {
    work_was_done_at_call = work_done.load();
    ++calls;
  });
  EXPECT_EQ(can, tested == place::kind::cpu);
  EXPECT_EQ(w.e->calls_back(), can);
  auto unrecorded = w.dev0->make_event();
  const bool can_unrecorded = unrecorded->when_done([&] { never_recorded = true; });
  EXPECT_EQ(can_unrecorded, can);
  EXPECT_EQ(never_recorded.load(), can) << "an event never recorded is complete: called at once";
  std::this_thread::sleep_for(race_window);
  EXPECT_EQ(calls.load(), 0) << "called back before the captured work finished";
  EXPECT_EQ(w.release(), ok);
  if (!can) return;
  const auto until = std::chrono::steady_clock::now() + limit;
  while (calls.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(work_was_done_at_call.load());
  // Finished already: the callback runs on the calling thread, before when_done returns.
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> on_caller{false};
  EXPECT_TRUE(w.e->when_done([&] { on_caller = std::this_thread::get_id() == caller; }));
  EXPECT_TRUE(on_caller.load());
}

TEST_P(device_rules, when_done_calls_back_at_the_latest_when_its_stream_stops) {
  blocked_work w;
  std::atomic<bool> called{false};
  const bool can = w.e->when_done([&] { called = true; });
  if (!can) {
    EXPECT_EQ(w.release(), ok);
    return;
  }
  std::this_thread::sleep_for(race_window);
  EXPECT_FALSE(called.load());
  // The stream stops while its work is blocked: nobody waits on the callback forever. (The
  // stop itself returns once the blocked task, which holds the device's thread, ends.)
  std::thread stopper([&] { w.dev0->stop(); });
  EXPECT_TRUE(eventually(called)) << "a stopped stream's callbacks must run: its work never will";
  w.g.open();
  stopper.join();
}

TEST_P(device_rules, host_waits_on_events_of_different_devices) {
  auto dev0 = open_place(0);
  auto dev1 = open_place(1);
  EXPECT_EQ(dev1->where(), tested_place(1));
  stream& s0 = dev0->get_stream(stream_kind::compute);
  stream& s1 = dev1->get_stream(stream_kind::compute);
  EXPECT_EQ(s1.where(), tested_place(1));
  gate g0, g1;
  s0.enqueue(g0.blocker());
  s1.enqueue(g1.blocker());
  auto e0 = dev0->make_event();
  auto e1 = dev1->make_event();
  s0.record(*e0);
  s1.record(*e1);

  g1.open();
  EXPECT_EQ(sync(*e1, *dev1), ok);
  EXPECT_TRUE(e1->query());
  EXPECT_FALSE(e0->query());
  g0.open();
  EXPECT_EQ(sync(*e0, *dev0), ok);
  EXPECT_TRUE(e0->query());

  // A stream of one device waits on an event of the other.
  gate g;
  std::atomic<bool> a_done{false}, b_saw_a{false};
  s0.enqueue([&] {
    if (g.pass()) a_done = true;
  });
  s0.record(*e0);
  s1.wait(*e0);
  s1.enqueue([&] { b_saw_a = a_done.load(); });
  std::this_thread::sleep_for(race_window);
  g.open();
  EXPECT_EQ(sync(s1, *dev1), ok);
  EXPECT_TRUE(b_saw_a.load());
}

TEST_P(device_rules, a_throwing_task_fails_its_stream) {
  auto dev = open_place(0);
  stream& s = dev->get_stream(stream_kind::compute);
  auto before = dev->make_event();
  auto after = dev->make_event();
  s.enqueue([] {});
  s.record(*before);
  s.enqueue([] { throw error("boom"); });
  std::atomic<bool> later_ran{false};
  s.enqueue([&] { later_ran = true; });
  s.record(*after);

  EXPECT_EQ(sync(s, *dev), failed);
  EXPECT_EQ(s.error(), std::optional<std::string>("boom"));
  EXPECT_EQ(s.error_kind(), error_kind::ordinary);
  EXPECT_FALSE(later_ran.load());
  EXPECT_TRUE(after->query()); // skipped work still completes, as failed
  EXPECT_EQ(sync(*after, *dev), failed);
  EXPECT_EQ(sync(*before, *dev), ok);
}

TEST_P(device_rules, a_wait_on_failed_work_fails_the_waiting_stream) {
  auto dev0 = open_place(0);
  auto dev1 = open_place(1);
  stream& a = dev0->get_stream(stream_kind::compute);
  stream& b = dev1->get_stream(stream_kind::communication);
  a.enqueue([] { throw error("boom"); });
  auto e = dev0->make_event();
  a.record(*e);
  b.wait(*e);
  std::atomic<bool> b_ran{false};
  b.enqueue([&] { b_ran = true; });
  auto b_done = dev1->make_event();
  b.record(*b_done);

  EXPECT_EQ(sync(b, *dev1), failed);
  EXPECT_FALSE(b_ran.load());
  ASSERT_TRUE(b.error().has_value());
  EXPECT_NE(b.error()->find("waited on failed work"), std::string::npos) << *b.error();
  EXPECT_NE(b.error()->find("compute stream of " + to_string(tested_place(0))), std::string::npos) << *b.error();
  EXPECT_EQ(b.error_kind(), error_kind::consequence); // what the executor ranks by
  EXPECT_EQ(sync(*b_done, *dev1), failed);
  EXPECT_EQ(a.error(), std::optional<std::string>("boom"));
  EXPECT_EQ(a.error_kind(), error_kind::ordinary);
}

// A task that throws a pe::error of the consequence kind (an op whose input's writer
// failed) records that kind with its message; any other exception is an ordinary failure,
// and clear_error() forgets the kind with the message.
TEST_P(device_rules, a_thrown_errors_kind_is_the_streams_error_kind) {
  auto dev = open_place(0);
  stream& s = dev->get_stream(stream_kind::compute);
  s.enqueue([] { throw error(error_kind::consequence, "an input's writer failed"); });
  EXPECT_EQ(sync(s, *dev), failed);
  EXPECT_EQ(s.error(), std::optional<std::string>("an input's writer failed"));
  EXPECT_EQ(s.error_kind(), error_kind::consequence);
  s.clear_error();
  EXPECT_EQ(s.error_kind(), error_kind::ordinary);

  s.enqueue([] { throw std::runtime_error("not a pe::error"); });
  EXPECT_EQ(sync(s, *dev), failed);
  EXPECT_EQ(s.error(), std::optional<std::string>("not a pe::error"));
  EXPECT_EQ(s.error_kind(), error_kind::ordinary);
  s.clear_error();

  s.enqueue([] { throw 42; });
  EXPECT_EQ(sync(s, *dev), failed);
  EXPECT_EQ(s.error(), std::optional<std::string>("unknown exception"));
  EXPECT_EQ(s.error_kind(), error_kind::ordinary);
}

TEST_P(device_rules, enqueue_always_runs_after_a_failure_and_is_told) {
  auto dev = open_place(0);
  stream& s = dev->get_stream(stream_kind::communication);
  std::vector<bool> told; // touched only by the stream's thread until synchronize returns
  s.enqueue_always([&](bool f) { told.push_back(f); });
  s.enqueue([] { throw error("boom"); });
  s.enqueue_always([&](bool f) { told.push_back(f); });
  EXPECT_EQ(sync(s, *dev), failed);
  EXPECT_EQ(told, (std::vector<bool>{false, true}));
}

TEST_P(device_rules, clear_error_lets_later_work_run) {
  auto dev = open_place(0);
  stream& s = dev->get_stream(stream_kind::compute);
  s.enqueue([] { throw error("boom"); });
  EXPECT_EQ(sync(s, *dev), failed);
  s.clear_error();
  EXPECT_EQ(s.error(), std::nullopt);
  std::atomic<bool> ran{false};
  s.enqueue([&] { ran = true; });
  auto e = dev->make_event();
  s.record(*e);
  EXPECT_EQ(sync(s, *dev), ok);
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(sync(*e, *dev), ok);
}

TEST_P(device_rules, the_first_error_wins) {
  auto dev = open_place(0);
  stream& s = dev->get_stream(stream_kind::compute);
  s.enqueue([] { throw error("first"); });
  s.enqueue([] { throw error("second"); });
  // Runs despite the failure, and its own exception must not replace the first message.
  s.enqueue_always([](bool) { throw error("third"); });
  EXPECT_EQ(sync(s, *dev), failed);
  EXPECT_EQ(s.error(), std::optional<std::string>("first"));
}

TEST_P(device_rules, stop_returns_while_a_stream_waits_on_work_that_never_completes) {
  blocked_work w;
  stream& b = w.dev1->get_stream(stream_kind::communication);
  b.wait(*w.e);
  std::atomic<bool> queued_ran{false}, late_ran{false};
  b.enqueue([&] { queued_ran = true; });
  auto b_done = w.dev1->make_event();
  b.record(*b_done);
  std::this_thread::sleep_for(race_window); // let B's thread block in the wait

  const auto stopped = bounded([&] { w.dev1->stop(); return true; }, [&] { w.g.open(); });
  EXPECT_EQ(stopped, ok) << "device::stop hung on a stream waiting for unfinished work";
  w.dev1->stop(); // idempotent
  b.enqueue([&] { late_ran = true; });
  EXPECT_EQ(sync(b, *w.dev1), failed);
  EXPECT_TRUE(b_done->query());
  EXPECT_EQ(sync(*b_done, *w.dev1), failed);

  EXPECT_EQ(w.release(), ok);
  EXPECT_FALSE(queued_ran.load());
  EXPECT_FALSE(late_ran.load());
}

TEST_P(device_rules, destroying_a_device_releases_its_waiting_streams) {
  blocked_work w;
  std::atomic<bool> ran{false};
  for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy}) {
    w.dev1->get_stream(kind).wait(*w.e);
    w.dev1->get_stream(kind).enqueue([&] { ran = true; });
  }
  std::this_thread::sleep_for(race_window);

  const auto destroyed = bounded([&] { w.dev1.reset(); return true; }, [&] { w.g.open(); });
  EXPECT_EQ(destroyed, ok) << "destroying the device hung on streams waiting for unfinished work";
  EXPECT_EQ(w.release(), ok);
  EXPECT_FALSE(ran.load());
}

TEST_P(device_rules, a_stream_waiting_on_a_stopped_stream_fails) {
  auto dev0 = open_place(0);
  auto dev1 = open_place(1);
  stream& a = dev0->get_stream(stream_kind::compute);
  stream& b = dev1->get_stream(stream_kind::compute);
  gate g;
  a.enqueue(g.blocker());
  auto e = dev0->make_event();
  a.record(*e);
  b.wait(*e);
  std::atomic<bool> b_ran{false};
  b.enqueue([&] { b_ran = true; });
  std::this_thread::sleep_for(race_window);

  // dev0's stop joins A's thread, which sits in the gated task: open the gate from aside.
  std::thread opener([&g] {
    std::this_thread::sleep_for(50ms);
    g.open();
  });
  dev0->stop();
  opener.join();
  EXPECT_EQ(sync(b, *dev1), failed);
  EXPECT_FALSE(b_ran.load());
  ASSERT_TRUE(b.error().has_value());
  EXPECT_NE(b.error()->find("waited on failed work"), std::string::npos) << *b.error();
  EXPECT_EQ(b.error_kind(), error_kind::consequence);
}

// A task that blocks the host way (event::synchronize) on a sibling stream, which itself
// waits on work that never completes: stop must flag the sibling before joining the task's
// thread, or the task never returns and stop never does either.
TEST_P(device_rules, stop_releases_a_task_synchronizing_on_a_sibling_stream) {
  blocked_work w;
  stream& comm = w.dev1->get_stream(stream_kind::communication);
  comm.wait(*w.e);
  auto comm_done = w.dev1->make_event();
  comm.record(*comm_done);
  std::atomic<bool> task_returned{false};
  w.dev1->get_stream(stream_kind::compute).enqueue([&] {
    comm_done->synchronize();
    task_returned = true;
  });
  std::this_thread::sleep_for(race_window);

  const auto stopped = bounded([&] { w.dev1->stop(); return true; }, [&] { w.g.open(); });
  EXPECT_EQ(stopped, ok) << "device::stop hung: the task blocked on the sibling stream was not released";
  EXPECT_EQ(w.release(), ok);
}

TEST_P(device_rules, copy_runs_in_stream_order) {
  auto dev = open_place(0);
  stream& s = dev->get_stream(stream_kind::copy);
  tensor src, dst;
  gate g;
  s.enqueue(g.blocker());
  // The copy must read what this earlier task writes, not src as it is at enqueue time.
  s.enqueue([&src] { src = tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}); });
  dev->copy(s, dst, src);
  tensor labels = tensor::from_vector<std::int64_t>({7, -8, 9}, {3});
  tensor labels_copy = tensor::zeros(dtype::fp32, {10});
  dev->copy(s, labels_copy, labels);
  g.open();
  ASSERT_EQ(sync(s, *dev), ok) << s.error().value_or("");

  ASSERT_TRUE(dst.initialized());
  EXPECT_EQ(dst.type(), dtype::fp32);
  EXPECT_EQ(dst.shape(), (shape_t{2, 3}));
  EXPECT_EQ(std::vector<float>(dst.values<float>().begin(), dst.values<float>().end()),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_NE(dst.raw(), src.raw()); // a copy, not shared storage
  EXPECT_EQ(labels_copy.type(), dtype::int64);
  EXPECT_EQ(labels_copy.shape(), (shape_t{3}));
  EXPECT_EQ(std::vector<std::int64_t>(labels_copy.values<std::int64_t>().begin(),
                                      labels_copy.values<std::int64_t>().end()),
            (std::vector<std::int64_t>{7, -8, 9}));
}

TEST_P(device_rules, copy_of_a_tensor_without_value_fails_the_stream) {
  auto dev = open_place(0);
  stream& s = dev->get_stream(stream_kind::copy);
  tensor src, dst;
  dev->copy(s, dst, src);
  EXPECT_EQ(sync(s, *dev), failed);
  ASSERT_TRUE(s.error().has_value());
  EXPECT_NE(s.error()->find("no value"), std::string::npos) << *s.error();
  EXPECT_FALSE(dst.initialized());
}

TEST_P(device_rules, kernel_context_binds_device_and_stream) {
  auto dev = open_place(0);
  kernel_context ctx("relu", {}, {}, {}, tested_place(0));
  EXPECT_EQ(ctx.dev(), nullptr);
  EXPECT_EQ(ctx.on(), nullptr);
  stream& s = dev->get_stream(stream_kind::compute);
  ctx.bind(dev.get(), &s);
  EXPECT_EQ(ctx.dev(), dev.get());
  EXPECT_EQ(ctx.on(), &s);
  EXPECT_EQ(ctx.where(), tested_place(0));
}

INSTANTIATE_TEST_SUITE_P(kinds, device_rules,
                         ::testing::Values(place::kind::cpu, place::kind::gpu),
                         [](const ::testing::TestParamInfo<place::kind>& info) {
                           return info.param == place::kind::cpu ? std::string("cpu_stream")
                                                                 : std::string("queued_stream");
                         });

} // namespace

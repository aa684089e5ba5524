// The in-process communicator over CPU places' communication streams: results, the
// completion callback, sequence order, and failures that reach every rank instead of
// hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectives/cpu/inproc_communicator.hpp"
#include "tests/support/collective_calls.hpp"
#include "devices/device.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;
using pe::testing::test_call;

/// How long anything that should finish gets before the test calls it a hang.
constexpr auto limit = 3000ms;

/// N CPU places and the communicator between them.
struct world {
  explicit world(int n) : comm(n) {
    for (int r = 0; r < n; ++r) devices.push_back(open_device(place::cpu(r)));
  }
  ~world() {
    comm.abort(); // releases a rank still waiting when a test failed
  }

  int size() const { return static_cast<int>(devices.size()); }
  stream& on(int rank) {
    return devices[static_cast<std::size_t>(rank)]->get_stream(stream_kind::communication);
  }

  /// Every rank's communication stream synchronized: its result, or nullopt when some rank
  /// did not finish within the limit (then the communicator is aborted and the devices
  /// stopped, so that no thread outlives the test).
  std::vector<std::optional<bool>> sync_all() {
    std::packaged_task<std::vector<bool>()> task([this] {
      std::vector<bool> results;
      for (int r = 0; r < size(); ++r) results.push_back(on(r).synchronize());
      return results;
    });
    auto result = task.get_future();
    std::thread waiter(std::move(task));
    if (result.wait_for(limit) != std::future_status::ready) {
      comm.abort();
      for (auto& d : devices) d->stop();
      waiter.join();
      return std::vector<std::optional<bool>>(devices.size(), std::nullopt);
    }
    waiter.join();
    std::vector<std::optional<bool>> out;
    for (bool ok : result.get()) out.push_back(ok);
    return out;
  }

  std::string error(int rank) { return on(rank).error().value_or("<no error>"); }

  inproc_communicator comm;
  // After comm: the devices go first, so no rank's part outlives the communicator.
  std::vector<std::unique_ptr<device>> devices;
};

std::vector<std::optional<bool>> all(int n, bool value) {
  return std::vector<std::optional<bool>>(static_cast<std::size_t>(n), value);
}

std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

std::vector<float> values_of(const tensor& t) {
  auto v = t.values<float>();
  return {v.begin(), v.end()};
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Sizes not multiple of the collective's 64-element chunk unit, and one large buffer.
const std::vector<std::size_t> sizes = {1, 63, 64, 65, 1000, 100003};

/// inputs[rank][variable] for `ranks` ranks.
std::vector<std::vector<std::vector<float>>> random_inputs(int ranks, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<std::vector<float>>> in(static_cast<std::size_t>(ranks));
  for (auto& rank : in)
    for (auto n : sizes) rank.push_back(random_values(n, rng));
  return in;
}

std::vector<std::vector<tensor>> tensors_of(const std::vector<std::vector<std::vector<float>>>& in) {
  std::vector<std::vector<tensor>> out;
  for (const auto& rank : in) {
    out.emplace_back();
    for (const auto& v : rank)
      out.back().push_back(tensor::from_vector(v, {static_cast<std::int64_t>(v.size())}));
  }
  return out;
}

std::vector<tensor*> pointers(std::vector<tensor>& ts) {
  std::vector<tensor*> out;
  for (auto& t : ts) out.push_back(&t);
  return out;
}

/// The element-wise sum of variable v in rank order 0 + 1 + 2 + ..., in float.
std::vector<float> rank_order_sum(const std::vector<std::vector<std::vector<float>>>& in,
                                  std::size_t v) {
  std::vector<float> sum = in[0][v];
  for (std::size_t r = 1; r < in.size(); ++r)
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += in[r][v][i];
  return sum;
}

TEST(communicator, all_reduce_gives_every_rank_the_rank_order_sum) {
  for (int n = 1; n <= 4; ++n) {
    world w(n);
    auto in = random_inputs(n, 10U + static_cast<unsigned>(n));
    auto buffers = tensors_of(in);
    for (int r = n - 1; r >= 0; --r)
      w.comm.launch(test_call(collective_call::kind::all_reduce, 0), r,
                    pointers(buffers[static_cast<std::size_t>(r)]), w.on(r));
    ASSERT_EQ(w.sync_all(), all(n, true)) << n << " ranks: " << w.error(0);
    for (std::size_t v = 0; v < sizes.size(); ++v) {
      const auto want = rank_order_sum(in, v);
      for (int r = 0; r < n; ++r)
        EXPECT_TRUE(bit_identical(values_of(buffers[static_cast<std::size_t>(r)][v]), want))
            << n << " ranks, rank " << r << ", variable of " << sizes[v];
    }
  }
}

TEST(communicator, reduce_writes_the_sum_on_the_root_only) {
  const int n = 3;
  for (int root = 0; root < n; ++root) {
    world w(n);
    auto in = random_inputs(n, 20U + static_cast<unsigned>(root));
    auto buffers = tensors_of(in);
    for (int r = 0; r < n; ++r)
      w.comm.launch(test_call(collective_call::kind::reduce, 0, root), r,
                    pointers(buffers[static_cast<std::size_t>(r)]), w.on(r));
    ASSERT_EQ(w.sync_all(), all(n, true)) << w.error(0);
    for (std::size_t v = 0; v < sizes.size(); ++v)
      for (int r = 0; r < n; ++r) {
        const auto& got = buffers[static_cast<std::size_t>(r)][v];
        const auto want = r == root ? rank_order_sum(in, v) : in[static_cast<std::size_t>(r)][v];
        EXPECT_TRUE(bit_identical(values_of(got), want))
            << "root " << root << ", rank " << r << ", variable of " << sizes[v];
      }
  }
}

TEST(communicator, broadcast_gives_every_rank_the_roots_values_and_shape) {
  world w(4);
  const int root = 2;
  std::mt19937 rng(30);
  const auto big = random_values(100003, rng);
  const auto small = random_values(6, rng);
  std::vector<std::vector<tensor>> buffers(4);
  buffers[0] = {tensor(), tensor()};                                       // uninitialised
  buffers[1] = {tensor::zeros(dtype::fp32, {3}), tensor::zeros(dtype::fp32, {1})}; // smaller
  buffers[2] = {tensor::from_vector(big, {100003}), tensor::from_vector(small, {2, 3})};
  buffers[3] = {tensor::zeros(dtype::fp32, {200000}), tensor::zeros(dtype::fp32, {6})}; // larger
  for (int r : {3, 0, 2, 1})
    w.comm.launch(test_call(collective_call::kind::broadcast, 0, root), r,
                  pointers(buffers[static_cast<std::size_t>(r)]), w.on(r));
  ASSERT_EQ(w.sync_all(), all(4, true)) << w.error(0);
  for (std::size_t r = 0; r < 4; ++r) {
    ASSERT_TRUE(buffers[r][0].initialized()) << r;
    EXPECT_EQ(buffers[r][0].type(), dtype::fp32);
    EXPECT_EQ(buffers[r][0].shape(), (shape_t{100003})) << r;
    EXPECT_EQ(buffers[r][1].shape(), (shape_t{2, 3})) << r;
    EXPECT_TRUE(bit_identical(values_of(buffers[r][0]), big)) << r;
    EXPECT_TRUE(bit_identical(values_of(buffers[r][1]), small)) << r;
  }
}

TEST(communicator, completion_runs_once_per_collective) {
  const int n = 3;
  const std::uint64_t k = 5;
  world w(n);
  std::mutex mutex;
  std::map<std::uint64_t, int> calls;
  std::map<std::uint64_t, bool> all_ok;
  std::map<std::uint64_t, bool> ordered_span;
  std::vector<std::vector<tensor>> buffers(n);
  for (auto& b : buffers)
    for (std::uint64_t s = 0; s < k; ++s) b.push_back(tensor::zeros(dtype::fp32, {100}));
  for (std::uint64_t s = 0; s < k; ++s)
    for (int r = 0; r < n; ++r)
      // Every rank hands a callback: still one call per collective in all.
      w.comm.launch(test_call(collective_call::kind::all_reduce, s), r,
                    {&buffers[static_cast<std::size_t>(r)][s]}, w.on(r),
                    [&, s](const collective_span& span, bool ok) {
                      std::lock_guard<std::mutex> guard(mutex);
                      ++calls[s];
                      all_ok[s] = (all_ok.count(s) == 0 || all_ok[s]) && ok;
                      ordered_span[s] = span.start_ns <= span.end_ns && span.start_ns > 0;
                    });
  ASSERT_EQ(w.sync_all(), all(n, true)) << w.error(0);
  std::lock_guard<std::mutex> guard(mutex);
  for (std::uint64_t s = 0; s < k; ++s) {
    EXPECT_EQ(calls[s], 1) << "collective #" << s;
    EXPECT_TRUE(all_ok[s]) << s;
    EXPECT_TRUE(ordered_span[s]) << s;
  }
}

TEST(communicator, ranks_launched_from_many_threads_run_in_sequence_order) {
  const int n = 4;
  const std::uint64_t k = 30;
  world w(n);
  // buffers[rank][sequence]: rank r brings r + 1 to collective s, so each sum is known.
  std::vector<std::vector<tensor>> buffers(n);
  for (int r = 0; r < n; ++r)
    for (std::uint64_t s = 0; s < k; ++s)
      buffers[static_cast<std::size_t>(r)].push_back(tensor::from_vector(
          std::vector<float>(65, static_cast<float>(r + 1) * static_cast<float>(s + 1)), {65}));
  std::vector<int> start_order = {0, 1, 2, 3};
  std::mt19937 rng(40);
  std::shuffle(start_order.begin(), start_order.end(), rng);
  std::vector<std::thread> launchers;
  for (int r : start_order)
    launchers.emplace_back([&w, &buffers, r, k] {
      std::mt19937 jitter(static_cast<unsigned>(50 + r));
      for (std::uint64_t s = 0; s < k; ++s) {
        if (jitter() % 3 == 0) std::this_thread::yield();
        if (jitter() % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(jitter() % 200));
        w.comm.launch(test_call(collective_call::kind::all_reduce, s), r,
                      {&buffers[static_cast<std::size_t>(r)][s]}, w.on(r));
      }
    });
  for (auto& t : launchers) t.join();
  ASSERT_EQ(w.sync_all(), all(n, true)) << w.error(0);

  std::vector<std::uint64_t> in_order(k);
  for (std::uint64_t s = 0; s < k; ++s) in_order[s] = s;
  const auto history = w.comm.history();
  ASSERT_EQ(history.size(), static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) EXPECT_EQ(history[static_cast<std::size_t>(r)], in_order) << r;
  for (int r = 0; r < n; ++r)
    for (std::uint64_t s = 0; s < k; ++s)
      EXPECT_EQ(values_of(buffers[static_cast<std::size_t>(r)][s]),
                std::vector<float>(65, 10.0F * static_cast<float>(s + 1)))
          << "rank " << r << ", collective #" << s;
}

TEST(communicator, an_out_of_sequence_launch_fails_every_rank) {
  world w(3);
  std::vector<tensor> buffers = {tensor::zeros(dtype::fp32, {8}), tensor::zeros(dtype::fp32, {8}),
                                 tensor::zeros(dtype::fp32, {8})};
  w.comm.launch(test_call(collective_call::kind::all_reduce, 0), 0, {&buffers[0]}, w.on(0));
  w.comm.launch(test_call(collective_call::kind::all_reduce, 1), 1, {&buffers[1]}, w.on(1));
  w.comm.launch(test_call(collective_call::kind::all_reduce, 0), 2, {&buffers[2]}, w.on(2));
  ASSERT_EQ(w.sync_all(), all(3, false));
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(w.error(r).find("expected #0"), std::string::npos) << r << ": " << w.error(r);
  EXPECT_NE(w.error(1).find("#1"), std::string::npos) << w.error(1);
}

TEST(communicator, a_failed_stream_fails_the_collective_on_every_rank) {
  const int n = 3;
  world w(n);
  auto in = random_inputs(n, 60);
  auto buffers = tensors_of(in);
  w.on(1).enqueue([] { throw error("poisoned"); });
  std::atomic<int> calls{0};
  std::atomic<bool> reported_ok{true};
  for (int r = 0; r < n; ++r)
    w.comm.launch(test_call(collective_call::kind::all_reduce, 0), r,
                  pointers(buffers[static_cast<std::size_t>(r)]), w.on(r),
                  [&](const collective_span&, bool ok) {
                    ++calls;
                    reported_ok = ok;
                  });
  ASSERT_EQ(w.sync_all(), all(n, false));
  EXPECT_EQ(w.error(1), "poisoned");
  for (int r : {0, 2})
    EXPECT_NE(w.error(r).find("earlier failure on rank 1"), std::string::npos) << r << ": " << w.error(r);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(reported_ok.load());

  // One collective's failure does not break the communicator: once the streams are
  // cleared, the next collective runs.
  for (int r = 0; r < n; ++r) w.on(r).clear_error();
  buffers = tensors_of(in);
  for (int r = 0; r < n; ++r)
    w.comm.launch(test_call(collective_call::kind::all_reduce, 1), r,
                  pointers(buffers[static_cast<std::size_t>(r)]), w.on(r));
  ASSERT_EQ(w.sync_all(), all(n, true)) << w.error(0);
  EXPECT_TRUE(bit_identical(values_of(buffers[2][4]), rank_order_sum(in, 4)));
}

TEST(communicator, mismatched_sizes_fail_naming_both) {
  world w(2);
  std::vector<tensor> buffers = {tensor::zeros(dtype::fp32, {4}), tensor::zeros(dtype::fp32, {5})};
  for (int r = 0; r < 2; ++r)
    w.comm.launch(test_call(collective_call::kind::all_reduce, 0), r, {&buffers[static_cast<std::size_t>(r)]},
                  w.on(r));
  ASSERT_EQ(w.sync_all(), all(2, false));
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(w.error(r).find("[4]"), std::string::npos) << r << ": " << w.error(r);
    EXPECT_NE(w.error(r).find("[5]"), std::string::npos) << r << ": " << w.error(r);
  }
}

TEST(communicator, mismatched_buffer_counts_fail_every_rank) {
  world w(2);
  std::vector<tensor> rank0 = {tensor::zeros(dtype::fp32, {4}), tensor::zeros(dtype::fp32, {4})};
  std::vector<tensor> rank1 = {tensor::zeros(dtype::fp32, {4})};
  w.comm.launch(test_call(collective_call::kind::all_reduce, 0), 0, pointers(rank0), w.on(0));
  w.comm.launch(test_call(collective_call::kind::all_reduce, 0), 1, pointers(rank1), w.on(1));
  ASSERT_EQ(w.sync_all(), all(2, false));
  EXPECT_NE(w.error(0).find("buffers"), std::string::npos) << w.error(0);
}

TEST(communicator, ranks_disagreeing_on_the_collective_fail_every_rank) {
  world w(2);
  std::vector<tensor> buffers = {tensor::zeros(dtype::fp32, {4}), tensor::zeros(dtype::fp32, {4})};
  w.comm.launch(test_call(collective_call::kind::all_reduce, 0), 0, {&buffers[0]}, w.on(0));
  w.comm.launch(test_call(collective_call::kind::broadcast, 0), 1, {&buffers[1]}, w.on(1));
  ASSERT_EQ(w.sync_all(), all(2, false));
  for (int r = 0; r < 2; ++r) { // both calls named, in the order the ranks joined
    EXPECT_NE(w.error(r).find("collective #0 differs between ranks"), std::string::npos) << r << ": " << w.error(r);
    EXPECT_NE(w.error(r).find("rank 0 calls test#0 (all_reduce, root 0)"), std::string::npos) << r << ": " << w.error(r);
    EXPECT_NE(w.error(r).find("rank 1 calls test#0 (broadcast, root 0)"), std::string::npos) << r << ": " << w.error(r);
  }
}

TEST(communicator, abort_releases_a_rank_waiting_for_the_others) {
  world w(2);
  tensor t = tensor::zeros(dtype::fp32, {8});
  w.comm.launch(test_call(collective_call::kind::all_reduce, 0), 0, {&t}, w.on(0));
  std::this_thread::sleep_for(20ms); // let rank 0 reach the meeting and wait there
  w.comm.abort();
  const auto t0 = std::chrono::steady_clock::now();
  std::packaged_task<bool()> task([&w] { return w.on(0).synchronize(); });
  auto result = task.get_future();
  std::thread waiter(std::move(task));
  const bool in_time = result.wait_for(limit) == std::future_status::ready;
  if (!in_time) w.devices[0]->stop();
  waiter.join();
  ASSERT_TRUE(in_time) << "rank 0 still waits after abort()";
  EXPECT_FALSE(result.get());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, limit);
  EXPECT_NE(w.error(0).find("aborted"), std::string::npos) << w.error(0);

  // A later launch fails at once too.
  tensor u = tensor::zeros(dtype::fp32, {8});
  w.comm.launch(test_call(collective_call::kind::all_reduce, 0), 1, {&u}, w.on(1));
  EXPECT_EQ(w.sync_all()[1], std::optional<bool>(false));
}

TEST(communicator, a_rank_outside_the_communicator_is_rejected) {
  world w(2);
  tensor t = tensor::zeros(dtype::fp32, {8});
  EXPECT_THROW(w.comm.launch(test_call(collective_call::kind::all_reduce, 0), 2, {&t}, w.on(1)), error);
  EXPECT_THROW(w.comm.launch(test_call(collective_call::kind::all_reduce, 0), -1, {&t}, w.on(1)), error);
  EXPECT_THROW(inproc_communicator(0), error);
}

// --- joining for a rank whose thread is busy ----------------------------------------------

/// Rank `rank`'s device thread held in a task on its compute stream until release(): a
/// kernel that runs long, during which the rank cannot reach its communication stream.
struct busy_rank {
  busy_rank(world& w, int rank) {
    w.devices[static_cast<std::size_t>(rank)]->get_stream(stream_kind::compute).enqueue([this] {
      started.set_value();
      released.get_future().wait();
    });
    started.get_future().wait();
  }
  void release() {
    if (!done) released.set_value();
    done = true;
  }
  ~busy_rank() { release(); }
  std::promise<void> started, released;
  bool done = false;
};

/// Launches collectives #first.. of all_reduce on every rank of `w` over `buffers`, each
/// rank's inputs ready as `ready(rank)` says; counts the completions in `calls`.
void launch_all_reduces(world& w, std::vector<std::vector<tensor>>& buffers, std::uint64_t first, int count,
                        const std::function<bool(int)>& ready, std::atomic<int>& calls, std::atomic<bool>& ok) {
  for (int k = 0; k < count; ++k)
    for (int r = 0; r < w.size(); ++r) {
      collective_call c = test_call(collective_call::kind::all_reduce, first + static_cast<std::uint64_t>(k));
      c.inputs_ready = [ready, r] { return ready(r); };
      std::vector<tensor*> mine = {&buffers[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)]};
      w.comm.launch(c, r, mine, w.on(r), [&calls, &ok](const collective_span&, bool fine) {
        ok = ok && fine;
        ++calls;
      });
    }
}

/// Whether `calls` reaches `want` within the limit.
bool reaches(const std::atomic<int>& calls, int want) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (calls.load() < want && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  return calls.load() >= want;
}

/// inputs[rank][k] for three collectives of different sizes (a chunk's worth and less).
std::vector<std::vector<std::vector<float>>> three_inputs(int ranks, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<std::vector<float>>> in(static_cast<std::size_t>(ranks));
  for (auto& rank : in)
    for (std::size_t n : {std::size_t{10}, std::size_t{1280}, std::size_t{100003}}) rank.push_back(random_values(n, rng));
  return in;
}

/// Two ranks, three all-reduces' inputs, and what their completions said.
struct two_ranks {
  explicit two_ranks(unsigned seed) : in(three_inputs(2, seed)), buffers(tensors_of(in)) {}

  /// Collectives #first..#first+2 over fresh copies of the inputs, `ready(rank)` saying
  /// whether a rank's inputs are written.
  void launch(std::uint64_t first, const std::function<bool(int)>& ready) {
    buffers = tensors_of(in);
    calls = 0;
    ok = true;
    launch_all_reduces(w, buffers, first, 3, ready, calls, ok);
  }

  /// Whether every rank's buffers hold the rank-order sums.
  bool summed() const {
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t r = 0; r < 2; ++r)
        if (!bit_identical(values_of(buffers[r][k]), rank_order_sum(in, k))) return false;
    return true;
  }

  world w{2};
  std::vector<std::vector<std::vector<float>>> in;
  std::vector<std::vector<tensor>> buffers;
  std::atomic<int> calls{0};
  std::atomic<bool> ok{true};
};

TEST(communicator, a_rank_busy_in_a_kernel_is_joined_for_once_its_inputs_are_ready) {
  two_ranks t(80);
  busy_rank busy(t.w, 1);
  t.launch(0, [](int) { return true; });
  // Rank 0's thread completes every collective for both ranks while rank 1's is held.
  ASSERT_TRUE(reaches(t.calls, 3)) << t.calls.load() << " of 3 collectives completed while rank 1 was busy";
  EXPECT_TRUE(t.ok.load());
  EXPECT_TRUE(t.w.on(0).synchronize());
  EXPECT_TRUE(t.summed());
  // Rank 1's parts find their collectives done once its thread comes back.
  busy.release();
  ASSERT_EQ(t.w.sync_all(), all(2, true)) << t.w.error(1);
  EXPECT_EQ(t.calls.load(), 3);
  EXPECT_EQ(t.w.comm.history(), (std::vector<std::vector<std::uint64_t>>{{0, 1, 2}, {0, 1, 2}}));
}

TEST(communicator, a_busy_rank_whose_inputs_are_not_ready_is_waited_for) {
  two_ranks t(81);
  busy_rank busy(t.w, 1);
  t.launch(0, [](int rank) { return rank == 0; });
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(t.calls.load(), 0) << "a collective completed without rank 1's inputs";
  busy.release();
  ASSERT_EQ(t.w.sync_all(), all(2, true)) << t.w.error(0) << " / " << t.w.error(1);
  EXPECT_EQ(t.calls.load(), 3);
  EXPECT_TRUE(t.ok.load());
  EXPECT_TRUE(t.summed());
}

TEST(communicator, after_a_failed_collective_no_rank_is_joined_for) {
  two_ranks t(82);
  // Rank 1's input writer fails: its inputs are never ready (what the executor's events
  // say), and its own thread fails the collectives.
  t.w.on(1).enqueue([] { throw error("poisoned"); });
  t.launch(0, [](int rank) { return rank != 1; });
  ASSERT_EQ(t.w.sync_all(), all(2, false));
  EXPECT_FALSE(t.ok.load());
  for (int r = 0; r < 2; ++r) t.w.on(r).clear_error();

  busy_rank busy(t.w, 1);
  t.launch(3, [](int) { return true; });
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(t.calls.load(), 0) << "rank 1 was joined for after a failure";
  busy.release();
  ASSERT_EQ(t.w.sync_all(), all(2, true)) << t.w.error(0) << " / " << t.w.error(1);
  EXPECT_EQ(t.calls.load(), 3);
  EXPECT_TRUE(t.summed());
}

} // namespace

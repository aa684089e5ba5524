// Desync with a name: places of one process that call different collectives at the same
// sequence number (another variable, kind, size or dtype) fail at once, every one of them,
// with an error naming both calls; a place that skips a collective leaves the others
// waiting, and the communicator's status (what a stall report prints) says who joined, who
// is missing and which sequence number each place has reached.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/cpu/inproc_communicator.hpp"
#include "core/tensor.hpp"
#include "devices/device.hpp"
#include "tests/support/collective_calls.hpp"
#include "tests/support/inproc_world.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;
using pe::testing::test_call;

/// How long anything that should finish gets before the test calls it a hang.
constexpr auto limit = pe::testing::inproc_world::limit;

using world = pe::testing::inproc_world;

collective_call named(collective_call::kind what, std::uint64_t sequence, const std::string& var) {
  collective_call c = test_call(what, sequence);
  c.label = to_string(what) + "(" + var + ")";
  return c;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(collective_desync, another_variable_at_the_same_sequence_fails_both_naming_both) {
  world w(2);
  tensor a = tensor::zeros(dtype::fp32, {8}), b = tensor::zeros(dtype::fp32, {8});
  w.comm.launch(named(collective_call::kind::all_reduce, 0, "fc_0.w_0@GRAD"), 0, {&a}, w.on(0));
  w.comm.launch(named(collective_call::kind::all_reduce, 0, "fc_0.b_0@GRAD"), 1, {&b}, w.on(1));
  for (int r = 0; r < 2; ++r) {
    const auto done = w.finished(r);
    ASSERT_TRUE(done.has_value()) << "rank " << r << " hangs";
    EXPECT_FALSE(*done);
    const std::string e = w.error(r);
    EXPECT_TRUE(has(e, "collective #0 differs between ranks")) << e;
    EXPECT_TRUE(has(e, "all_reduce(fc_0.w_0@GRAD) (all_reduce, root 0) over 1 buffer (FP32 [8])")) << e;
    EXPECT_TRUE(has(e, "all_reduce(fc_0.b_0@GRAD) (all_reduce, root 0) over 1 buffer (FP32 [8])")) << e;
  }
}

TEST(collective_desync, another_kind_size_or_dtype_fails_naming_both) {
  struct variant {
    collective_call::kind kind;
    tensor second;
    std::string second_shows;
  };
  std::vector<variant> variants;
  variants.push_back({collective_call::kind::reduce, tensor::zeros(dtype::fp32, {6}), "(reduce, root 0) over 1 buffer (FP32 [6])"});
  variants.push_back({collective_call::kind::all_reduce, tensor::zeros(dtype::fp32, {5}), "(all_reduce, root 0) over 1 buffer (FP32 [5])"});
  variants.push_back({collective_call::kind::all_reduce, tensor::zeros(dtype::int64, {6}), "(all_reduce, root 0) over 1 buffer (INT64 [6])"});
  for (auto& v : variants) {
    SCOPED_TRACE(v.second_shows);
    world w(3);
    tensor first = tensor::zeros(dtype::fp32, {6}), third = tensor::zeros(dtype::fp32, {6});
    w.comm.launch(named(collective_call::kind::all_reduce, 0, "w@GRAD"), 0, {&first}, w.on(0));
    // Rank 0 has joined before rank 1 comes: rank 1's call is compared with rank 0's.
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (w.comm.status()->pending.empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    w.comm.launch(named(v.kind, 0, "w@GRAD"), 1, {&v.second}, w.on(1));
    for (int r = 0; r < 2; ++r) {
      const auto done = w.finished(r);
      ASSERT_TRUE(done.has_value()) << "rank " << r << " hangs";
      EXPECT_FALSE(*done);
      const std::string e = w.error(r);
      EXPECT_TRUE(has(e, "rank 0 calls all_reduce(w@GRAD) (all_reduce, root 0) over 1 buffer (FP32 [6])")) << e;
      EXPECT_TRUE(has(e, "rank 1 calls ")) << e;
      EXPECT_TRUE(has(e, v.second_shows)) << e;
    }
    // The third rank, which never came, fails as soon as it does: the ranks are out of step.
    w.comm.launch(named(collective_call::kind::all_reduce, 0, "w@GRAD"), 2, {&third}, w.on(2));
    const auto done = w.finished(2);
    ASSERT_TRUE(done.has_value());
    EXPECT_FALSE(*done);
    EXPECT_TRUE(has(w.error(2), "differs between ranks")) << w.error(2);
  }
}

TEST(collective_desync, a_rank_that_skips_a_collective_is_named_as_missing) {
  world w(3);
  tensor t0 = tensor::zeros(dtype::fp32, {4}), t2 = tensor::zeros(dtype::fp32, {4});
  w.comm.launch(named(collective_call::kind::all_reduce, 0, "fc_0.w_0@GRAD"), 0, {&t0}, w.on(0));
  w.comm.launch(named(collective_call::kind::all_reduce, 0, "fc_0.w_0@GRAD"), 2, {&t2}, w.on(2));
  // Rank 1 never launches #0: ranks 0 and 2 wait (their streams do not finish) ...
  std::optional<communicator_status> status;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  do {
    std::this_thread::sleep_for(1ms);
    status = w.comm.status();
  } while ((status->pending.empty() || status->pending[0].joined.size() < 2) &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_FALSE(w.finished(0, 50ms).has_value());
  // ... and the status says who joined, who is missing, and where each rank stands.
  ASSERT_EQ(status->pending.size(), 1u);
  const collective_status& c = status->pending[0];
  EXPECT_EQ(c.sequence, 0u);
  EXPECT_EQ(c.label, "all_reduce(fc_0.w_0@GRAD)");
  EXPECT_EQ(c.joined, (std::vector<int>{0, 2}));
  EXPECT_TRUE(c.finished.empty());
  EXPECT_GT(c.first_join_ns, 0);
  EXPECT_EQ(status->next_sequence, (std::vector<std::uint64_t>{1, 0, 1}));
  // Aborting (what a stalled step does) releases the waiting ranks with an error.
  w.comm.abort();
  for (int r : {0, 2}) {
    const auto done = w.finished(r);
    ASSERT_TRUE(done.has_value()) << "rank " << r << " hangs after the abort";
    EXPECT_FALSE(*done);
    EXPECT_TRUE(has(w.error(r), "aborted")) << w.error(r);
  }
}

} // namespace

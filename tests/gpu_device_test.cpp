// The CUDA device of GPU places through the generic device interface (devices/device.hpp,
// devices/stream.hpp): streams, events, failures, stops, copies and the caching allocator.
// Every test needs a GPU and skips, saying why, where there is none (the CUDA build without
// a driver, or a build without CUDA).
#include <atomic>
#include <chrono>
#include <numeric>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "devices/caching_allocator.hpp"
#include "devices/device.hpp"
#include "devices/gpu_runtime.hpp"

namespace pe {
namespace {

using namespace std::chrono_literals;

class GpuDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu_inventory inv = query_gpus();
    if (inv.count == 0) GTEST_SKIP() << "no GPU: " << inv.problem;
  }
};

tensor host_iota(std::int64_t n, float start) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return tensor::from_vector(v, {n});
}

TEST_F(GpuDevice, LogicalPlacesShareTheGpuButNotTheirStreams) {
  auto a = open_device(place::gpu(0));
  auto b = open_device(place::gpu(1, 0)); // gpu:0x2's second place
  EXPECT_EQ(b->where(), place::gpu(1, 0));
  EXPECT_NE(&a->get_stream(stream_kind::compute), &b->get_stream(stream_kind::compute));
  EXPECT_NE(&a->get_stream(stream_kind::compute), &a->get_stream(stream_kind::copy));
  EXPECT_NE(&a->memory(), &b->memory()); // a caching allocator per place (cuda_memory)
  auto a_again = open_device(place::gpu(0));
  EXPECT_EQ(&a->memory(), &a_again->memory()); // ...which the place's devices share
  EXPECT_EQ(a->get_stream(stream_kind::communication).where(), place::gpu(0));
}

TEST_F(GpuDevice, CopiesRoundTripThroughTheDeviceAcrossStreams) {
  auto dev = open_device(place::gpu(0));
  stream& copy = dev->get_stream(stream_kind::copy);
  stream& compute = dev->get_stream(stream_kind::compute);
  const tensor src = host_iota(1 << 20, 1.0f);
  tensor on_gpu, on_gpu2, back;
  dev->copy(copy, on_gpu, src); // uninitialised dst, host src: to the device
  auto fed = dev->make_event();
  copy.record(*fed);
  compute.wait(*fed);
  on_gpu2 = tensor(dtype::fp32, {1}, place::gpu(0), dev->memory());
  dev->copy(compute, on_gpu2, on_gpu); // device to device, resized
  auto computed = dev->make_event();
  compute.record(*computed);
  copy.wait(*computed);
  dev->copy(copy, back, on_gpu2); // uninitialised dst, GPU src: to the host
  ASSERT_TRUE(copy.synchronize()) << copy.error().value_or("");
  EXPECT_EQ(on_gpu.where(), place::gpu(0));
  EXPECT_EQ(back.where(), place::cpu(0));
  ASSERT_EQ(back.shape(), src.shape());
  EXPECT_TRUE(std::equal(src.values<float>().begin(), src.values<float>().end(),
                         back.values<float>().begin()));
  EXPECT_TRUE(computed->query());
}

TEST_F(GpuDevice, HostCopiesOfTwoPlacesThroughReusedPinnedBuffersArriveIntact) {
  // devices/cuda/pinned_staging: copies from the host go through pinned buffers of the GPU
  // (one pool for its places) that are reused once their transfer ended. Many copies of different data and sizes, from two
  // places' copy streams at once, each read back: a buffer reused too early, or shared by
  // two threads, shows as another copy's data.
  auto a = open_device(place::gpu(0, 0));
  auto b = open_device(place::gpu(1, 0));
  constexpr int copies = 24;
  std::vector<tensor> src, on_gpu(copies), back(copies);
  for (int i = 0; i < copies; ++i) src.push_back(host_iota((1 << 16) + 4099 * i, 1000.0f * i));
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < copies; ++i) {
      device& d = i % 2 == 0 ? *a : *b;
      d.copy(d.get_stream(stream_kind::copy), on_gpu[i], src[i]);
    }
    for (auto* d : {a.get(), b.get()}) ASSERT_TRUE(d->get_stream(stream_kind::copy).synchronize());
    for (int i = 0; i < copies; ++i) {
      device& d = i % 2 == 0 ? *a : *b;
      back[i] = tensor();
      d.copy(d.get_stream(stream_kind::copy), back[i], on_gpu[i]);
    }
    for (auto* d : {a.get(), b.get()}) ASSERT_TRUE(d->get_stream(stream_kind::copy).synchronize());
    for (int i = 0; i < copies; ++i) {
      ASSERT_EQ(back[i].shape(), src[i].shape()) << i;
      EXPECT_TRUE(std::equal(src[i].values<float>().begin(), src[i].values<float>().end(),
                             back[i].values<float>().begin()))
          << "copy " << i << " of round " << round;
    }
  }
}

TEST_F(GpuDevice, AThrowingTaskFailsItsStreamAndEveryWaiter) {
  auto dev = open_device(place::gpu(0));
  stream& compute = dev->get_stream(stream_kind::compute);
  stream& comm = dev->get_stream(stream_kind::communication);
  std::atomic<bool> later_ran{false}, always_failed{false}, waiter_ran{false};
  compute.enqueue([] { throw error("kernel exploded"); });
  compute.enqueue([&] { later_ran = true; });
  compute.enqueue_always([&](bool failed) { always_failed = failed; });
  auto e = dev->make_event();
  compute.record(*e);
  comm.wait(*e);
  comm.enqueue([&] { waiter_ran = true; });
  EXPECT_FALSE(compute.synchronize());
  EXPECT_FALSE(comm.synchronize());
  EXPECT_FALSE(e->synchronize());
  EXPECT_TRUE(e->query());
  EXPECT_FALSE(later_ran);
  EXPECT_TRUE(always_failed);
  EXPECT_FALSE(waiter_ran);
  EXPECT_EQ(compute.error().value_or(""), "kernel exploded");
  EXPECT_EQ(compute.error_kind(), error_kind::ordinary);
  EXPECT_EQ(comm.error().value_or(""), "waited on failed work of the compute stream of gpu:0");
  EXPECT_EQ(comm.error_kind(), error_kind::consequence);

  compute.clear_error();
  comm.clear_error();
  compute.enqueue([&] { later_ran = true; });
  EXPECT_TRUE(compute.synchronize());
  EXPECT_TRUE(later_ran);
  EXPECT_FALSE(compute.error().has_value());
}

TEST_F(GpuDevice, AWaitKeepsTheRecordItSawAndEnqueueNeverBlocks) {
  auto dev = open_device(place::gpu(0));
  stream& a = dev->get_stream(stream_kind::compute);
  stream& b = dev->get_stream(stream_kind::copy);
  std::atomic<int> stage{0};
  std::atomic<int> seen_by_b{-1};
  const auto before = std::chrono::steady_clock::now();
  a.enqueue([&] {
    std::this_thread::sleep_for(100ms);
    stage = 1;
  });
  auto e = dev->make_event();
  a.record(*e);
  b.wait(*e);
  b.enqueue([&] { seen_by_b = stage.load(); });
  // A later record of the same event (after more slow work) does not move b's wait.
  a.enqueue([&] {
    std::this_thread::sleep_for(300ms);
    stage = 2;
  });
  a.record(*e);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 50ms); // nothing above blocked
  ASSERT_TRUE(b.synchronize());
  EXPECT_EQ(seen_by_b.load(), 1);
  EXPECT_FALSE(e->query()); // the second record is still ahead
  EXPECT_TRUE(e->synchronize());
  EXPECT_EQ(stage.load(), 2);
}

TEST_F(GpuDevice, ATimedSynchronizeGivesUpOnAStuckStreamAndCountsItsItems) {
  // The stall watch's look at a GPU stream (queued_stream::synchronize_for): a stream whose
  // host thread is held in launch code is not done within the limit, and says so at once
  // after it, with the item it holds still counted as enqueued, not completed.
  auto dev = open_device(place::gpu(0));
  stream& s = dev->get_stream(stream_kind::compute);
  const stream::item_counts before = s.counts();
  std::atomic<bool> release{false};
  s.enqueue([&] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  s.enqueue([] {});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.synchronize_for(50ms).has_value());
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 2s);
  const stream::item_counts stuck = s.counts();
  EXPECT_EQ(stuck.enqueued - before.enqueued, 2u);
  EXPECT_EQ(stuck.completed, before.completed);
  release = true;
  const std::optional<bool> done = s.synchronize_for(10s);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(*done);
  EXPECT_EQ(s.counts().completed - before.completed, 2u);
}

TEST_F(GpuDevice, StopDropsQueuedWorkAndEndsWaits) {
  auto dev = open_device(place::gpu(0));
  stream& s = dev->get_stream(stream_kind::compute);
  std::atomic<bool> second_ran{false};
  s.enqueue([] { std::this_thread::sleep_for(100ms); });
  s.enqueue([&] { second_ran = true; });
  auto e = dev->make_event();
  s.record(*e);
  std::thread stopper([&] { dev->stop(); });
  EXPECT_FALSE(e->synchronize()); // returns: the stop drops the record
  stopper.join();
  EXPECT_FALSE(second_ran);
  s.enqueue([&] { second_ran = true; }); // a stopped stream drops new work
  EXPECT_FALSE(second_ran);
}

TEST_F(GpuDevice, TrainingLikeStepsStopReservingDeviceMemory) {
  auto dev = open_device(place::gpu(0));
  auto* cache = dynamic_cast<caching_allocator*>(&dev->memory());
  ASSERT_NE(cache, nullptr);
  stream& compute = dev->get_stream(stream_kind::compute);
  const tensor batch = host_iota(64 * 784, 0.0f);
  std::uint64_t reserves_after_warmup = 0;
  for (int step = 0; step < 50; ++step) {
    tensor x, y;
    dev->copy(compute, x, batch);
    y = tensor(dtype::fp32, {64, 256}, place::gpu(0), dev->memory());
    tensor z(dtype::fp32, {64, 10}, place::gpu(0), dev->memory());
    ASSERT_TRUE(compute.synchronize()) << compute.error().value_or("");
    if (step == 4) reserves_after_warmup = cache->statistics().reserves;
  }
  EXPECT_EQ(cache->statistics().reserves, reserves_after_warmup);
  EXPECT_EQ(cache->statistics().in_use_bytes, 0u);
}

} // namespace
} // namespace pe

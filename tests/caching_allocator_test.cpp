// The caching allocator's logic (size classes, stream-ordered reuse behind fences, the
// out-of-memory path) with a fake device backend: it runs on any machine.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "devices/caching_allocator.hpp"

namespace pe {
namespace {

/// A fence the test completes by hand (as the device would by finishing its work).
struct fake_fence_state {
  bool done = false;
  long ready_at = -1; // with a fence delay: the device's tick at which it is passed
};

struct fake_device {
  std::map<void*, std::size_t> live; // reserved blocks
  std::size_t capacity = std::size_t{1} << 30;
  std::size_t used = 0;
  std::vector<std::shared_ptr<fake_fence_state>> fences;
  bool fences_done_at_once = false;
  long fence_delay = -1; // >= 0: a fence is passed that many ticks after it is put
  long tick = 0;         // the device's progress, advanced by the test
  int waits = 0;
};

class fake_fence final : public memory_fence {
 public:
  fake_fence(fake_device& d, std::shared_ptr<fake_fence_state> s) : device_(d), state_(std::move(s)) {}
  bool done() override {
    return state_->done || (state_->ready_at >= 0 && device_.tick >= state_->ready_at);
  }
  void wait() override {
    ++device_.waits;
    state_->done = true;
  }

 private:
  fake_device& device_;
  std::shared_ptr<fake_fence_state> state_;
};

class fake_backend final : public memory_backend {
 public:
  explicit fake_backend(fake_device& d) : device_(d) {}
  void* reserve(std::size_t bytes) override {
    if (device_.used + bytes > device_.capacity) return nullptr;
    void* p = std::malloc(bytes);
    device_.live[p] = bytes;
    device_.used += bytes;
    return p;
  }
  void unreserve(void* block, std::size_t bytes) override {
    EXPECT_EQ(device_.live.at(block), bytes);
    device_.live.erase(block);
    device_.used -= bytes;
    std::free(block);
  }
  std::unique_ptr<memory_fence> fence() override {
    auto s = std::make_shared<fake_fence_state>();
    s->done = device_.fences_done_at_once;
    if (device_.fence_delay >= 0) s->ready_at = device_.tick + device_.fence_delay;
    device_.fences.push_back(s);
    return std::make_unique<fake_fence>(device_, s);
  }

 private:
  fake_device& device_;
};

TEST(CachingAllocator, RoundsToSizeClasses) {
  EXPECT_EQ(caching_allocator::round_size(0), 512u);
  EXPECT_EQ(caching_allocator::round_size(1), 512u);
  EXPECT_EQ(caching_allocator::round_size(512), 512u);
  EXPECT_EQ(caching_allocator::round_size(513), 1024u);
  EXPECT_EQ(caching_allocator::round_size((1u << 20) - 1), 1u << 20);
  EXPECT_EQ(caching_allocator::round_size(1u << 20), 2u << 20);
  EXPECT_EQ(caching_allocator::round_size((2u << 20) + 1), 4u << 20);
}

TEST(CachingAllocator, FreedBlockWaitsForItsFenceBeforeReuse) {
  fake_device dev;
  caching_allocator a(std::make_unique<fake_backend>(dev));
  void* first = nullptr;
  {
    auto b = a.allocate(1000);
    first = b.get();
    EXPECT_EQ(a.statistics().in_use_bytes, 1024u);
  } // freed by the host: kernels launched on it may still run
  EXPECT_EQ(a.statistics().pending_blocks, 1u);
  EXPECT_EQ(a.statistics().in_use_bytes, 0u);

  // One small free is no batch yet: a miss reserves rather than fences.
  std::vector<std::shared_ptr<std::byte>> others;
  others.push_back(a.allocate(1000));
  EXPECT_NE(others.back().get(), first);
  EXPECT_EQ(dev.fences.size(), 0u);
  // Seven more frees make a batch of eight: the next miss fences it. The fence is not done:
  // no block comes back; a new one is reserved.
  for (int i = 0; i < 6; ++i) others.push_back(a.allocate(1000));
  others.clear();
  EXPECT_EQ(a.statistics().pending_blocks, 8u);
  const std::uint64_t reserves = a.statistics().reserves;
  auto second = a.allocate(1000);
  EXPECT_EQ(dev.fences.size(), 1u);
  EXPECT_EQ(a.statistics().fenced_blocks, 8u);
  EXPECT_EQ(a.statistics().reserves, reserves + 1);

  // Once the device passed the fence, the blocks are reused: no reservation.
  dev.fences[0]->done = true;
  auto third = a.allocate(900);
  EXPECT_EQ(a.statistics().reserves, reserves + 1);
  EXPECT_EQ(a.statistics().fenced_blocks, 0u);
  EXPECT_EQ(a.statistics().cached_blocks, 7u);
  std::vector<std::shared_ptr<std::byte>> reused;
  bool first_back = third.get() == first;
  for (int i = 0; i < 7; ++i) {
    reused.push_back(a.allocate(1000));
    first_back = first_back || reused.back().get() == first;
  }
  EXPECT_TRUE(first_back);
  EXPECT_EQ(a.statistics().reserves, reserves + 1);
}

TEST(CachingAllocator, SteadyTrainingLoopReservesNothingAfterWarmUp) {
  fake_device dev;
  dev.fences_done_at_once = true; // an idle device
  caching_allocator a(std::make_unique<fake_backend>(dev));
  const std::vector<std::size_t> sizes = {784 * 256 * 4, 256 * 4, 64 * 784 * 4, 64 * 10 * 4, 4};
  std::uint64_t reserves_at_step_10 = 0;
  for (int step = 0; step < 50; ++step) {
    std::vector<std::shared_ptr<std::byte>> held;
    for (std::size_t s : sizes) held.push_back(a.allocate(s));
    if (step == 9) reserves_at_step_10 = a.statistics().reserves;
  }
  EXPECT_EQ(a.statistics().reserves, reserves_at_step_10);
  // The live set, plus at most a batch of small frees not yet fenced (under 1 MiB here).
  EXPECT_LE(a.statistics().reserves, 2 * sizes.size());
  // One fence per batch of frees, not per free.
  EXPECT_LE(dev.fences.size(), 50u);
  EXPECT_EQ(a.statistics().in_use_bytes, 0u);
}

TEST(CachingAllocator, ABusyDeviceStopsReservingAfterWarmUp) {
  // The device passes a fence only some launches after it is put (it runs behind the host),
  // as a GPU in training does. The reserves must level off, whatever the lag.
  const std::vector<std::size_t> sizes = {64 * 784 * 4, 64 * 256 * 4, 64 * 10 * 4, 256 * 128 * 4,
                                          128 * 4, 10 * 4, 784 * 256 * 4};
  for (const long lag : {1L, 3L, 7L}) {
    SCOPED_TRACE("fences passed " + std::to_string(lag) + " ticks late");
    fake_device dev;
    dev.fence_delay = lag;
    caching_allocator a(std::make_unique<fake_backend>(dev));
    std::uint64_t reserves_at_step_20 = 0;
    for (int step = 0; step < 200; ++step) {
      std::vector<std::shared_ptr<std::byte>> held;
      for (std::size_t s : sizes) {
        held.push_back(a.allocate(s));
        ++dev.tick; // one launch per allocation
      }
      if (step == 19) reserves_at_step_20 = a.statistics().reserves;
    }
    EXPECT_EQ(a.statistics().reserves, reserves_at_step_20);
    EXPECT_LE(a.statistics().reserves, 3 * sizes.size()); // about two steps' worth in flight
  }
}

TEST(CachingAllocator, AChainOfOpsFencesBatchesOfFreesNotEachFree) {
  // Each op allocates its output and frees its input, as a chain of small ops does: a fence
  // (an event on every stream of the device) per free cost more host time than the ops'
  // launches on an H100, so frees are fenced in batches, and reuse still levels off.
  fake_device dev;
  dev.fences_done_at_once = true;
  caching_allocator a(std::make_unique<fake_backend>(dev));
  std::shared_ptr<std::byte> input = a.allocate(4);
  for (int op = 0; op < 800; ++op) input = a.allocate(4); // the previous output is freed
  EXPECT_LE(dev.fences.size(), 800u / 4);
  EXPECT_GE(dev.fences.size(), 800u / 16);
  EXPECT_LE(a.statistics().reserves, 16u);
}

TEST(CachingAllocator, DoesNotHandATinyRequestAHugeBlock) {
  fake_device dev;
  dev.fences_done_at_once = true;
  caching_allocator a(std::make_unique<fake_backend>(dev));
  void* big = nullptr;
  {
    auto b = a.allocate(8u << 20);
    big = b.get();
  }
  auto small = a.allocate(100);
  EXPECT_NE(small.get(), big);
  auto again = a.allocate(7u << 20); // within 2x: the cached block fits
  EXPECT_EQ(again.get(), big);
}

TEST(CachingAllocator, OutOfMemoryWaitsForFencesAndReturnsTheCache) {
  fake_device dev;
  dev.capacity = 4u << 20;
  caching_allocator a(std::make_unique<fake_backend>(dev));
  { auto b = a.allocate(3u << 20); } // 4 MiB class, pending behind a fence never done
  EXPECT_EQ(dev.used, 4u << 20);
  // Another size class does not fit beside it: the allocator waits for the fence, gives
  // the cached block back, and reserves again.
  auto c = a.allocate(1000);
  EXPECT_EQ(dev.waits, 1);
  EXPECT_EQ(a.statistics().unreserves, 1u);
  EXPECT_EQ(dev.used, 512u + 512u); // only the new block (1000 -> 1024)
  EXPECT_EQ(a.statistics().reserved_bytes, 1024u);
}

TEST(CachingAllocator, ThrowsNamingTheRequestWhenTheDeviceIsFull) {
  fake_device dev;
  dev.capacity = 1u << 20;
  caching_allocator a(std::make_unique<fake_backend>(dev));
  auto held = a.allocate(600u << 10);
  try {
    a.allocate(600u << 10);
    FAIL() << "expected pe::error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("device memory exhausted: 614400 bytes requested"),
              std::string::npos)
        << e.what();
  }
}

TEST(CachingAllocator, BuffersOutliveTheAllocatorAndEverythingGoesBack) {
  fake_device dev;
  std::shared_ptr<std::byte> survivor;
  {
    caching_allocator a(std::make_unique<fake_backend>(dev));
    survivor = a.allocate(4096);
    { auto cached = a.allocate(100); }
    dev.fences_done_at_once = true;
    auto other = a.allocate(200000); // fences the pending block
  }
  EXPECT_FALSE(dev.live.empty()); // the survivor keeps the state alive
  survivor.reset();
  EXPECT_TRUE(dev.live.empty()); // last buffer gone: every block unreserved after a fence
  EXPECT_EQ(dev.used, 0u);
}

TEST(CachingAllocator, ConcurrentAllocationsAndFrees) {
  fake_device dev;
  dev.fences_done_at_once = true;
  caching_allocator a(std::make_unique<fake_backend>(dev));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 2000; ++i) {
        auto b = a.allocate(static_cast<std::size_t>(64 * (1 + (i + t) % 7)));
        std::memset(b.get(), t, 64); // distinct live blocks: no two threads share one
      }
    });
  for (auto& t : threads) t.join();
  const auto s = a.statistics();
  EXPECT_EQ(s.in_use_bytes, 0u);
  // At most four blocks live at once, plus at most a batch of eight frees not yet fenced.
  EXPECT_LE(s.reserves, 4u + 8u);
}

} // namespace
} // namespace pe

namespace pe {
namespace {

/// A backend whose reservations wait until the test lets them go: an allocator inside one
/// holds its lock meanwhile.
class held_backend final : public memory_backend {
 public:
  explicit held_backend(fake_device& d) : inner_(d) {}
  void* reserve(std::size_t bytes) override {
    if (hold.load()) {
      entered = true;
      while (hold.load()) std::this_thread::yield();
    }
    return inner_.reserve(bytes);
  }
  void unreserve(void* block, std::size_t bytes) override { inner_.unreserve(block, bytes); }
  std::unique_ptr<memory_fence> fence() override { return inner_.fence(); }

  std::atomic<bool> hold{false};
  std::atomic<bool> entered{false};

 private:
  fake_backend inner_;
};

TEST(CachingAllocator, TryReleaseCachedGivesTheCacheBackUnlessTheAllocatorIsBusy) {
  // What another place on the same GPU asks of this allocator when it runs out of memory
  // (devices/cuda/cuda_memory.cpp): its cached blocks, but never a wait for its lock.
  fake_device dev;
  dev.fences_done_at_once = true;
  auto backend = std::make_unique<held_backend>(dev);
  held_backend& held = *backend;
  caching_allocator a(std::move(backend));
  {
    std::vector<std::shared_ptr<std::byte>> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back(a.allocate(1000));
  }
  auto kept = a.allocate(1000); // fences the batch of eight: seven come back to the cache
  ASSERT_EQ(a.statistics().cached_blocks, 7u);

  // Busy: a reservation in progress holds the allocator; the call returns at once, taking nothing.
  held.hold = true;
  std::thread busy([&] { auto big = a.allocate(std::size_t{4} << 20); });
  while (!held.entered.load()) std::this_thread::yield();
  a.try_release_cached();
  EXPECT_EQ(dev.live.size(), 8u); // the seven cached and the one kept: none given back
  held.hold = false;
  busy.join();
  EXPECT_EQ(a.statistics().cached_blocks, 7u);

  // Idle: the cache goes back to the device.
  const std::uint64_t unreserves = a.statistics().unreserves;
  a.try_release_cached();
  EXPECT_EQ(a.statistics().cached_blocks, 0u);
  EXPECT_GE(a.statistics().unreserves, unreserves + 7);
}

// A captured step's blocks: while a hold is open nothing freed is reused, no fence is put,
// and the blocks come back only once the hold (the captured graph) is gone.
TEST(CachingAllocator, AHoldKeepsFreedBlocksOutOfReuseUntilItIsDestroyed) {
  fake_device dev;
  dev.fences_done_at_once = true;
  caching_allocator a(std::make_unique<fake_backend>(dev));
  void* before = nullptr;
  {
    auto warm = a.allocate(1000);
    before = warm.get();
  }
  // A full batch makes the next allocation fence and reuse the warm block.
  for (int i = 0; i < 8; ++i) a.allocate(100000);
  auto hold = a.hold_frees();
  ASSERT_NE(hold, nullptr);
  const std::size_t fences = dev.fences.size();
  std::vector<void*> captured;
  for (int i = 0; i < 20; ++i) {
    auto b = a.allocate(1000);
    captured.push_back(b.get());
  } // each freed at once: held, so every allocation got a block of its own
  for (std::size_t i = 0; i < captured.size(); ++i)
    for (std::size_t j = i + 1; j < captured.size(); ++j) EXPECT_NE(captured[i], captured[j]);
  EXPECT_EQ(dev.fences.size(), fences) << "no fence while a hold is open";
  EXPECT_EQ(hold->blocks(), 20u);
  EXPECT_THROW(a.hold_frees(), error) << "one hold at a time";
  hold->close();
  {
    auto after_close = a.allocate(1000); // reused as usual again, freed into the batch
  }
  EXPECT_EQ(hold->blocks(), 20u) << "a closed hold collects nothing more";
  hold.reset(); // the graph is gone: its blocks go back behind the next fence
  std::vector<std::shared_ptr<std::byte>> again;
  for (int i = 0; i < 20; ++i) again.push_back(a.allocate(1000));
  int reused = 0;
  for (const auto& b : again)
    for (void* c : captured) reused += b.get() == c;
  EXPECT_GT(reused, 0) << "the held blocks are reused once the hold is destroyed";
  (void)before;
}

TEST(CachingAllocator, AHoldFailsAnAllocationInsteadOfWaitingForFences) {
  fake_device dev;
  dev.capacity = 4096;
  caching_allocator a(std::make_unique<fake_backend>(dev));
  auto hold = a.hold_frees();
  { auto b = a.allocate(4096); }
  try {
    a.allocate(4096);
    FAIL() << "expected the allocation to fail";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("while a step was captured"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dev.waits, 0);
  hold.reset();
  EXPECT_NO_THROW(a.allocate(4096)); // the held block is free again (behind a fence)
}

} // namespace
} // namespace pe

// Each thread's lists of small host blocks (core/small_block_cache.hpp), which
// host_block_cache hands every block below its min_cached_bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "core/host_block_cache.hpp"
#include "core/small_block_cache.hpp"

namespace {

namespace small = pe::small_block_cache;

bool aligned(void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

TEST(SmallBlockCache, AFreedBlockComesBackForItsSizeClass) {
  void* a = small::take(1000);
  ASSERT_TRUE(aligned(a));
  const std::size_t before = small::kept_bytes();
  small::give(a, 1000);
  EXPECT_EQ(small::kept_bytes(), before + 1024); // rounded up to a power of two
  EXPECT_EQ(small::take(1020), a);               // the same class: 1024 bytes
  EXPECT_EQ(small::kept_bytes(), before);
  small::give(a, 1020);
  void* other = small::take(2000); // another class
  EXPECT_NE(other, a);
  EXPECT_TRUE(aligned(other));
  small::give(other, 2000);
}

TEST(SmallBlockCache, EverySizeBelowTheLimitIsUsableAndAligned) {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                            small::max_bytes / 2 + 1, small::max_bytes - 1}) {
    auto* p = static_cast<unsigned char*>(small::take(bytes));
    ASSERT_TRUE(aligned(p)) << bytes;
    for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i); // all of it writable
    small::give(p, bytes);
  }
}

TEST(SmallBlockCache, AThreadKeepsAtMostItsLimit) {
  std::vector<void*> blocks;
  const std::size_t block = small::max_bytes - 1; // 64 KiB each
  const std::size_t count = small::thread_limit_bytes / small::max_bytes + 8;
  for (std::size_t i = 0; i < count; ++i) blocks.push_back(small::take(block));
  for (void* b : blocks) small::give(b, block);
  EXPECT_LE(small::kept_bytes(), small::thread_limit_bytes);
  EXPECT_GE(small::kept_bytes(), small::thread_limit_bytes - small::max_bytes);
}

TEST(SmallBlockCache, ABlockGoesToTheListsOfTheThreadThatFreesIt) {
  void* a = small::take(3000);
  std::size_t kept_there = 0;
  void* taken_there = nullptr;
  std::thread([&] {
    small::give(a, 3000);
    kept_there = small::kept_bytes();
    taken_there = small::take(3000);
    small::give(taken_there, 3000); // given back to the system as the thread ends
  }).join();
  EXPECT_EQ(kept_there, 4096u);
  EXPECT_EQ(taken_there, a);
}

TEST(SmallBlockCache, HostBlockCacheHandsItTheSmallBlocks) {
  pe::host_block_cache cache(std::size_t{64} << 20);
  void* p = cache.take(pe::host_block_cache::min_cached_bytes - 1);
  const std::size_t before = small::kept_bytes();
  cache.give(p, pe::host_block_cache::min_cached_bytes - 1);
  EXPECT_EQ(small::kept_bytes(), before + small::max_bytes);
  EXPECT_EQ(cache.counts().takes, 0u); // not the pool's
}

} // namespace

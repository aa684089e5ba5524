// host_block_cache: large host blocks reused instead of returned to the system, the pool's
// size bounds, best fit, its limit (oldest freed first), threads; byte_buffer's helpers and
// host_allocator over the process-wide pool.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "core/byte_buffer.hpp"
#include "core/host_allocator.hpp"
#include "core/host_block_cache.hpp"

namespace pe {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

TEST(host_block_cache, a_freed_large_block_is_reused) {
  host_block_cache cache(16 * mib);
  void* a = cache.take(mib + 5);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % host_block_cache::alignment, 0u);
  std::memset(a, 7, mib + 5); // the whole request is usable
  cache.give(a, mib + 5);
  EXPECT_EQ(cache.counts().pooled_blocks, 1u);
  EXPECT_EQ(cache.counts().pooled_bytes, host_block_cache::round_size(mib + 5));
  void* b = cache.take(mib);
  EXPECT_EQ(b, a); // same size class
  const auto s = cache.counts();
  EXPECT_EQ(s.takes, 2u);
  EXPECT_EQ(s.reuses, 1u);
  EXPECT_EQ(s.pooled_blocks, 0u);
  EXPECT_EQ(s.in_use_bytes, host_block_cache::round_size(mib + 5));
  cache.give(b, mib);
  EXPECT_EQ(cache.counts().in_use_bytes, 0u);
}

TEST(host_block_cache, small_and_huge_blocks_bypass_the_pool) {
  host_block_cache cache(256 * mib);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, host_block_cache::min_cached_bytes - 1,
                            host_block_cache::max_cached_bytes + 1}) {
    void* p = cache.take(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % host_block_cache::alignment, 0u);
    cache.give(p, bytes);
  }
  const auto s = cache.counts();
  EXPECT_EQ(s.takes, 0u);
  EXPECT_EQ(s.pooled_blocks, 0u);
  // A table-sized block starts on a 2 MiB boundary (for transparent huge pages), pooled or not.
  for (std::size_t bytes : {host_block_cache::huge_pages_from_bytes, host_block_cache::max_cached_bytes + 1}) {
    void* p = cache.take(bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % (std::size_t{2} << 20), 0u) << bytes;
    cache.give(p, bytes);
  }
  EXPECT_TRUE(host_block_cache::pooled_size(host_block_cache::min_cached_bytes));
  EXPECT_TRUE(host_block_cache::pooled_size(host_block_cache::max_cached_bytes));
}

TEST(host_block_cache, best_fit_takes_a_block_at_most_a_quarter_larger) {
  host_block_cache cache(64 * mib);
  void* big = cache.take(2 * mib);
  cache.give(big, 2 * mib);
  void* half = cache.take(mib); // 2 MiB would waste half: a new block
  EXPECT_NE(half, big);
  EXPECT_EQ(cache.counts().reuses, 0u);
  void* most = cache.take(2 * mib - 400 * 1024); // 1.6 MiB: within a quarter of 2 MiB
  EXPECT_EQ(most, big);
  EXPECT_EQ(cache.counts().reuses, 1u);
  cache.give(half, mib);
  cache.give(most, 2 * mib - 400 * 1024);
  // The block keeps its own size: it comes back as the 2 MiB it is.
  EXPECT_EQ(cache.counts().pooled_bytes, 3 * mib);
}

TEST(host_block_cache, the_limit_drops_the_blocks_freed_longest_ago) {
  host_block_cache cache(3 * mib);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(cache.take(mib));
  for (void* b : blocks) cache.give(b, mib);
  auto s = cache.counts();
  EXPECT_EQ(s.pooled_blocks, 3u);
  EXPECT_EQ(s.pooled_bytes, 3 * mib);
  // The three kept are the last three freed.
  std::vector<void*> again;
  for (int i = 0; i < 3; ++i) again.push_back(cache.take(mib));
  EXPECT_EQ(cache.counts().reuses, 3u);
  for (void* b : again) EXPECT_NE(std::find(blocks.begin() + 1, blocks.end(), b), blocks.end());
  for (void* b : again) cache.give(b, mib);
  cache.set_limit(mib);
  EXPECT_EQ(cache.counts().pooled_bytes, mib);
  cache.set_limit(0); // pooling off
  EXPECT_EQ(cache.counts().pooled_blocks, 0u);
  void* p = cache.take(mib);
  cache.give(p, mib);
  EXPECT_EQ(cache.counts().pooled_blocks, 0u);
  EXPECT_EQ(cache.limit(), 0u);
}

TEST(host_block_cache, release_gives_every_pooled_block_back) {
  host_block_cache cache(64 * mib);
  void* a = cache.take(mib);
  void* b = cache.take(3 * mib);
  cache.give(a, mib);
  cache.give(b, 3 * mib);
  EXPECT_EQ(cache.counts().pooled_blocks, 2u);
  cache.release();
  EXPECT_EQ(cache.counts().pooled_blocks, 0u);
  EXPECT_EQ(cache.counts().pooled_bytes, 0u);
}

TEST(host_block_cache, threads_take_and_give_without_sharing_a_block) {
  host_block_cache cache(8 * mib);
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::size_t bytes = (1 + static_cast<std::size_t>((i + t) % 3)) * 100 * 1024;
        auto* p = static_cast<unsigned char*>(cache.take(bytes));
        std::memset(p, t + 1, bytes);
        std::this_thread::yield();
        for (std::size_t k = 0; k < bytes; k += 4096) wrong[static_cast<std::size_t>(t)] += p[k] != t + 1;
        cache.give(p, bytes);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int w : wrong) EXPECT_EQ(w, 0);
  const auto s = cache.counts();
  EXPECT_EQ(s.takes, 800u);
  EXPECT_GT(s.reuses, 0u);
  EXPECT_EQ(s.in_use_bytes, 0u);
}

TEST(host_block_cache, the_limit_from_the_environment_is_a_whole_number_of_mib) {
  EXPECT_EQ(host_block_cache::parse_limit("0"), std::size_t{0});
  EXPECT_EQ(host_block_cache::parse_limit("64"), 64 * mib);
  EXPECT_EQ(host_block_cache::parse_limit("1048576"), (std::size_t{1} << 20) * mib);
  for (const char* bad : {"", "-1", "1.5", "64M", " 64", "1048577", "99999999999999999999"})
    EXPECT_FALSE(host_block_cache::parse_limit(bad).has_value()) << bad;
}

TEST(byte_buffer, append_and_copy_keep_every_byte) {
  std::vector<char> source(300 * 1024);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<char>(i * 31 + 7);
  byte_buffer out;
  append_bytes(out, source.data(), 1000);
  append_bytes(out, source.data() + 1000, source.size() - 1000);
  append_bytes(out, source.data(), 0);
  ASSERT_EQ(out.size(), source.size());
  EXPECT_EQ(std::memcmp(out.data(), source.data(), source.size()), 0);
  const byte_buffer copy = bytes_of(out.data(), out.size());
  EXPECT_EQ(copy, out);
  EXPECT_TRUE(bytes_of(nullptr, 0).empty());
}

TEST(host_allocator, a_large_tensor_buffer_comes_from_the_pool) {
  auto& cache = host_block_cache::instance();
  if (cache.limit() < 4 * mib) GTEST_SKIP() << "PE_ACTOR_HOST_CACHE_MIB turned the pool down";
  const auto before = cache.counts();
  std::byte* first = nullptr;
  {
    auto a = host_allocator::instance().allocate(3 * mib);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
  }
  auto b = host_allocator::instance().allocate(3 * mib);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(cache.counts().reuses - before.reuses, 1u);
}

} // namespace
} // namespace pe

#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace pe {

/// Large host blocks kept for reuse, so a training step's megabyte buffers (activations,
/// gathered sparse rows, the packets and payloads that cross processes) do not go back to
/// the kernel when freed and fault back in, page by page and zeroed, in the next step.
///
/// Why: glibc serves blocks above its mmap threshold with a fresh mmap, and trims the free
/// top of its heaps; a 2-process sparse step (bench/sparse_bench) took ~900 page faults per
/// step in one process that way, 2-3 ms of its 8 ms in the kernel.
///
/// Blocks from `min_cached_bytes` up to `max_cached_bytes` are rounded up to a multiple of
/// `granule_bytes` and, once freed, kept in a best-fit pool (a request takes the smallest
/// free block at least its size and at most a quarter larger). The pool holds at most
/// limit() bytes: beyond it, the blocks freed longest ago go back to the system first, so
/// what a one-off burst left (the packets of a table sent at start) gives way to what the
/// steps reuse. Smaller blocks go to the freeing thread's small_block_cache (no lock, no
/// limit but its own), larger ones straight to the system allocator (a table's size,
/// allocated once). Every block is 64-byte aligned; from
/// huge_pages_from_bytes on, 2 MiB aligned and advised (madvise) to use transparent huge
/// pages.
///
/// Thread-safe (one mutex; only the few large allocations of a step take it). Blocks may
/// be freed by another thread than the one that took them. Under AddressSanitizer the
/// pooled blocks are poisoned, so a use after free is still reported.
class host_block_cache {
 public:
  static constexpr std::size_t alignment = 64;
  static constexpr std::size_t granule_bytes = std::size_t{64} << 10;
  static constexpr std::size_t min_cached_bytes = std::size_t{64} << 10;
  static constexpr std::size_t max_cached_bytes = std::size_t{64} << 20;
  /// Blocks from this size on are 2 MiB aligned and advised to use transparent huge pages.
  static constexpr std::size_t huge_pages_from_bytes = std::size_t{32} << 20;
  /// The pool's limit unless PE_ACTOR_HOST_CACHE_MIB sets it (a whole number of MiB, 0
  /// turns pooling off; another value is named in a warning on stderr and this one kept):
  /// 64 MiB, where a step's reused buffers in the benchmarks take 10-20 MiB.
  static constexpr std::size_t default_limit_bytes = std::size_t{64} << 20;

  struct stats {
    std::uint64_t takes = 0;        ///< pooled-size requests
    std::uint64_t reuses = 0;       ///< of them, served from the pool
    std::size_t pooled_bytes = 0;   ///< free blocks held now
    std::size_t pooled_blocks = 0;  ///< (counted when asked: the free list's length)
    std::size_t in_use_bytes = 0;   ///< pooled-size blocks handed out and not yet freed
  };

  explicit host_block_cache(std::size_t limit_bytes = default_limit_bytes);
  ~host_block_cache();
  host_block_cache(const host_block_cache&) = delete;
  host_block_cache& operator=(const host_block_cache&) = delete;

  /// The process-wide pool (never destroyed: buffers may be freed during static
  /// destruction). Its limit comes from PE_ACTOR_HOST_CACHE_MIB.
  static host_block_cache& instance();

  /// At least `bytes` (1 for 0), 64-byte aligned, never null (throws std::bad_alloc).
  void* take(std::size_t bytes);
  /// Gives back a block take() returned for `bytes` (the same count).
  void give(void* block, std::size_t bytes);

  std::size_t limit() const;
  /// Changes the limit; blocks pooled beyond the new one go back to the system.
  void set_limit(std::size_t bytes);
  /// Gives every pooled block back to the system.
  void release();
  stats counts() const;

  /// PE_ACTOR_HOST_CACHE_MIB's value `text` in bytes: nullopt unless a whole number of MiB
  /// (digits only) up to 1 TiB.
  static std::optional<std::size_t> parse_limit(const std::string& text);

  /// Whether a request of `bytes` is served from the pool (the size bounds, not the limit).
  static bool pooled_size(std::size_t bytes) { return bytes >= min_cached_bytes && bytes <= max_cached_bytes; }
  /// A pooled request rounded up to the granule.
  static std::size_t round_size(std::size_t bytes) { return (bytes + granule_bytes - 1) / granule_bytes * granule_bytes; }

 private:
  void trim_locked(std::size_t limit);

  struct pooled;
  using age_list = std::list<pooled>;                          // oldest first
  using size_index = std::multimap<std::size_t, age_list::iterator>; // best fit
  struct pooled {
    void* block;
    std::size_t size;
    size_index::iterator by_size;
  };
  void drop_locked(age_list::iterator it);

  mutable std::mutex mutex_;
  std::size_t limit_;
  age_list free_by_age_;
  size_index free_by_size_;
  std::unordered_map<void*, std::size_t> in_use_;   // block -> its size (may exceed the request's)
  stats stats_;
};

} // namespace pe

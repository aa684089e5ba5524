#include "core/host_block_cache.hpp"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "core/asan_poison.hpp"
#include "core/small_block_cache.hpp"

namespace pe {

// Every size has one home: the small blocks' lists below min_cached_bytes, the pool or the system above.
static_assert(small_block_cache::max_bytes == host_block_cache::min_cached_bytes);

namespace {

constexpr std::size_t huge_page = std::size_t{2} << 20;

/// Blocks of a table's size start on a 2 MiB boundary and ask the kernel for transparent
/// huge pages (where THP is "madvise", as on many distributions, nothing else gets them):
/// an embedding's steps touch thousands of rows spread over hundreds of MiB, and with 4 KiB
/// pages nearly every row costs a TLB miss, a page walk that a virtual machine doubles.
bool wants_huge_pages(std::size_t bytes) { return bytes >= host_block_cache::huge_pages_from_bytes; }

std::align_val_t alignment_for(std::size_t bytes) {
  return std::align_val_t{wants_huge_pages(bytes) ? huge_page : host_block_cache::alignment};
}

void* system_take(std::size_t bytes) {
  void* block = ::operator new(bytes == 0 ? 1 : bytes, alignment_for(bytes));
  if (wants_huge_pages(bytes)) (void)madvise(block, bytes / huge_page * huge_page, MADV_HUGEPAGE); // a hint
  return block;
}

/// `bytes`: the size system_take was given for `block`.
void system_give(void* block, std::size_t bytes) { ::operator delete(block, alignment_for(bytes)); }

/// PE_ACTOR_HOST_CACHE_MIB as bytes; the default when unset, or (with a warning) not valid.
std::size_t limit_from_environment() {
  const char* text = std::getenv("PE_ACTOR_HOST_CACHE_MIB");
  if (text == nullptr) return host_block_cache::default_limit_bytes;
  if (const auto limit = host_block_cache::parse_limit(text)) return *limit;
  std::fprintf(stderr,
               "pe-actor: warning: PE_ACTOR_HOST_CACHE_MIB=%s is not a whole number of MiB (0 to 1048576); "
               "the host block pool keeps its default of %zu MiB\n",
               text, host_block_cache::default_limit_bytes >> 20);
  return host_block_cache::default_limit_bytes;
}

} // namespace

std::optional<std::size_t> host_block_cache::parse_limit(const std::string& text) {
  if (text.empty() || text.size() > 7 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const std::size_t mib = std::stoul(text);
  if (mib > (std::size_t{1} << 20)) return std::nullopt;
  return mib << 20;
}

host_block_cache::host_block_cache(std::size_t limit_bytes) : limit_(limit_bytes) {}

host_block_cache::~host_block_cache() {
  release();
  // Blocks still in use are the callers' to free; a give() after destruction would be a
  // bug, which is why instance() is never destroyed.
}

host_block_cache& host_block_cache::instance() {
  static auto* cache = new host_block_cache(limit_from_environment());
  return *cache;
}

void* host_block_cache::take(std::size_t bytes) {
  if (bytes < min_cached_bytes) return small_block_cache::take(bytes);
  if (!pooled_size(bytes)) return system_take(bytes);
  const std::size_t size = round_size(bytes);
  std::unique_lock lock(mutex_);
  ++stats_.takes;
  // Best fit: the smallest free block of at least `size`, if it wastes at most a quarter.
  if (auto it = free_by_size_.lower_bound(size); it != free_by_size_.end() && it->first <= size + size / 4) {
    void* block = it->second->block;
    const std::size_t got = it->first;
    free_by_age_.erase(it->second);
    free_by_size_.erase(it);
    stats_.pooled_bytes -= got;
    ++stats_.reuses;
    stats_.in_use_bytes += got;
    in_use_.emplace(block, got);
    PE_UNPOISON(block, got);
    return block;
  }
  lock.unlock();
  void* block = system_take(size);
  lock.lock();
  stats_.in_use_bytes += size;
  in_use_.emplace(block, size);
  return block;
}

void host_block_cache::give(void* block, std::size_t bytes) {
  if (block == nullptr) return;
  if (bytes < min_cached_bytes) {
    small_block_cache::give(block, bytes);
    return;
  }
  if (!pooled_size(bytes)) {
    system_give(block, bytes);
    return;
  }
  std::unique_lock lock(mutex_);
  const auto it = in_use_.find(block);
  // Not ours (cannot happen for blocks take() returned): the system's, as for other sizes.
  const std::size_t size = it == in_use_.end() ? 0 : it->second;
  if (it != in_use_.end()) in_use_.erase(it);
  stats_.in_use_bytes -= size;
  if (size == 0 || size > limit_) {
    lock.unlock();
    system_give(block, size == 0 ? bytes : size);
    return;
  }
  PE_POISON(block, size);
  const auto at = free_by_age_.insert(free_by_age_.end(), pooled{block, size, {}});
  at->by_size = free_by_size_.emplace(size, at);
  stats_.pooled_bytes += size;
  trim_locked(limit_);
}

std::size_t host_block_cache::limit() const {
  std::lock_guard lock(mutex_);
  return limit_;
}

void host_block_cache::set_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  limit_ = bytes;
  trim_locked(bytes);
}

void host_block_cache::release() {
  std::lock_guard lock(mutex_);
  trim_locked(0);
}

void host_block_cache::trim_locked(std::size_t limit) {
  // The blocks freed longest ago go first. (system_give under the lock: munmap of a large
  // block is quick next to what it saves, and trimming is rare.)
  while (stats_.pooled_bytes > limit && !free_by_age_.empty()) drop_locked(free_by_age_.begin());
}

void host_block_cache::drop_locked(age_list::iterator it) {
  PE_UNPOISON(it->block, it->size);
  system_give(it->block, it->size);
  stats_.pooled_bytes -= it->size;
  free_by_size_.erase(it->by_size);
  free_by_age_.erase(it);
}

host_block_cache::stats host_block_cache::counts() const {
  std::lock_guard lock(mutex_);
  stats out = stats_;
  out.pooled_blocks = free_by_age_.size();
  return out;
}

} // namespace pe

#include "core/small_block_cache.hpp"

#include <array>
#include <bit>
#include <new>
#include <vector>

#include "core/asan_poison.hpp"

namespace pe::small_block_cache {

namespace {

constexpr std::size_t alignment = 64;
constexpr std::size_t smallest = 64;
/// Size classes 64 B, 128 B, ..., max_bytes (what a request just below max_bytes rounds to).
constexpr std::size_t classes = std::countr_zero(max_bytes) - std::countr_zero(smallest) + 1;

/// The class of `bytes` (< max_bytes) and its block size.
std::size_t class_of(std::size_t bytes) {
  const std::size_t size = std::bit_ceil(bytes < smallest ? smallest : bytes);
  return static_cast<std::size_t>(std::countr_zero(size) - std::countr_zero(smallest));
}

constexpr std::size_t size_of(std::size_t k) { return smallest << k; }

void* system_take(std::size_t k) { return ::operator new(size_of(k), std::align_val_t{alignment}); }
void system_give(void* block) { ::operator delete(block, std::align_val_t{alignment}); }

/// A thread's free blocks by class.
struct free_lists {
  std::array<std::vector<void*>, classes> blocks;
  std::size_t bytes = 0;

  ~free_lists();
};

/// Set once the thread's lists are destroyed (trivially destructible, so it stays readable
/// while the thread's other thread_local objects are destroyed): later gives and takes
/// go to the system.
thread_local bool lists_gone = false;
thread_local free_lists lists;

free_lists::~free_lists() {
  lists_gone = true;
  for (std::size_t k = 0; k < classes; ++k)
    for (void* block : blocks[k]) {
      PE_UNPOISON(block, size_of(k));
      system_give(block);
    }
}

} // namespace

void* take(std::size_t bytes) {
  const std::size_t k = class_of(bytes);
  if (lists_gone) return system_take(k);
  std::vector<void*>& free = lists.blocks[k];
  if (free.empty()) return system_take(k);
  void* block = free.back();
  free.pop_back();
  lists.bytes -= size_of(k);
  PE_UNPOISON(block, size_of(k));
  return block;
}

void give(void* block, std::size_t bytes) {
  if (block == nullptr) return;
  const std::size_t k = class_of(bytes);
  if (lists_gone || lists.bytes + size_of(k) > thread_limit_bytes) {
    system_give(block);
    return;
  }
  PE_POISON(block, size_of(k));
  lists.blocks[k].push_back(block);
  lists.bytes += size_of(k);
}

std::size_t kept_bytes() { return lists_gone ? 0 : lists.bytes; }

} // namespace pe::small_block_cache

#include "core/host_allocator.hpp"

#include "core/host_block_cache.hpp"

namespace pe {

std::shared_ptr<std::byte> host_allocator::allocate(std::size_t bytes) {
  auto& cache = host_block_cache::instance();
  auto* p = static_cast<std::byte*>(cache.take(bytes));
  return {p, [&cache, bytes](std::byte* q) { cache.give(q, bytes); }};
}

host_allocator& host_allocator::instance() {
  static host_allocator a;
  return a;
}

} // namespace pe

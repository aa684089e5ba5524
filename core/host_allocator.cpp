#include "core/host_allocator.hpp"

#include <new>

namespace pe {

std::shared_ptr<std::byte> host_allocator::allocate(std::size_t bytes) {
  constexpr std::align_val_t alignment{64};
  auto* p = static_cast<std::byte*>(::operator new(bytes == 0 ? 1 : bytes, alignment));
  return {p, [](std::byte* q) { ::operator delete(q, alignment); }};
}

host_allocator& host_allocator::instance() {
  static host_allocator a;
  return a;
}

} // namespace pe

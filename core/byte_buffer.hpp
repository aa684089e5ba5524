#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

#include "core/host_block_cache.hpp"

namespace pe {

/// A std::allocator-like allocator over host_block_cache::instance() whose value
/// construction leaves bytes as they are: a byte_buffer resized to receive a payload is not
/// first zeroed (every user writes the bytes it resized for).
template <class T>
struct host_buffer_allocator {
  using value_type = T;
  host_buffer_allocator() = default;
  template <class U>
  host_buffer_allocator(const host_buffer_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(host_block_cache::instance().take(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { host_block_cache::instance().give(p, n * sizeof(T)); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(static_cast<Args&&>(args)...);
  }
  template <class U>
  bool operator==(const host_buffer_allocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const host_buffer_allocator<U>&) const noexcept { return false; }
};

/// The bytes that cross processes (packets, payloads, encoded tensors and rows): pooled
/// by host_block_cache when large, never zeroed before they are written.
using byte_buffer = std::vector<char, host_buffer_allocator<char>>;

/// Appends `n` bytes from `from` with one memcpy. Use it instead of insert() or a
/// range constructor: libstdc++ copies into a vector whose allocator is not std::allocator
/// element by element (a byte loop ~10x slower than memcpy for a megabyte payload). Reserve
/// first where the final size is known; growth relocates byte by byte too.
inline void append_bytes(byte_buffer& out, const void* from, std::size_t n) {
  if (n == 0) return;
  const std::size_t at = out.size();
  out.resize(at + n); // default-initialised: no zeroing
  std::memcpy(out.data() + at, from, n);
}

/// A byte_buffer holding a copy of [from, from + n).
inline byte_buffer bytes_of(const void* from, std::size_t n) {
  byte_buffer out;
  out.reserve(n);
  append_bytes(out, from, n);
  return out;
}

} // namespace pe

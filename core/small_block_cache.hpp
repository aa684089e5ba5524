#pragma once

#include <cstddef>

namespace pe {

/// Host blocks below host_block_cache::min_cached_bytes, kept for reuse by each thread: the
/// small tensors a step allocates and frees again (activations of a few rows per place,
/// parameter gradients, batch statistics) come back from a free list instead of glibc.
///
/// Why: glibc serves a 64-byte aligned block of 1-64 KiB through its memalign path, which
/// splits and merges chunks (malloc_consolidate) on every call; on the ResNet fixture on 2
/// places (batch 8) malloc and free took about a tenth of the samples, and keeping every
/// temporary across steps instead ran 5-18% faster. Blocks freed here stay in the freeing
/// thread's lists: in the engine a tensor is freed on the device thread that wrote it last,
/// which is the thread that will allocate it again in the next step.
///
/// Sizes are rounded up to a power of two from 64 bytes; every block is 64-byte aligned. A
/// thread keeps at most `thread_limit_bytes` free (the rest goes back to the system), and
/// gives back all it kept when it ends. Lock-free (thread-local). Under AddressSanitizer the
/// kept blocks are poisoned.
namespace small_block_cache {

/// Blocks of this size and above are not small: host_block_cache::min_cached_bytes, whose
/// take() and give() hand the smaller ones here.
constexpr std::size_t max_bytes = std::size_t{64} << 10;
/// The most a thread keeps free.
constexpr std::size_t thread_limit_bytes = std::size_t{4} << 20;

/// A block of at least `bytes` (< max_bytes; 1 for 0), 64-byte aligned; throws
/// std::bad_alloc.
void* take(std::size_t bytes);
/// Gives back a block take() returned for `bytes` (the same count), on any thread.
void give(void* block, std::size_t bytes);

/// The bytes the calling thread keeps free (for tests).
std::size_t kept_bytes();

} // namespace small_block_cache

} // namespace pe

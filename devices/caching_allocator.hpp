#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "devices/device.hpp"

namespace pe {

/// Marks the device work submitted so far (on every stream that may use the memory): done()
/// once all of it has finished. A CUDA backend records an event on each stream.
class memory_fence {
 public:
  virtual ~memory_fence() = default;
  virtual bool done() = 0;
  /// Blocks until done; used only when memory runs out.
  virtual void wait() = 0;
};

/// Where a caching_allocator gets its memory. Plain C++, so the caching logic is tested
/// with a fake backend on machines without a GPU.
class memory_backend {
 public:
  virtual ~memory_backend() = default;
  /// A new block of `bytes`; nullptr when the device is out of memory.
  virtual void* reserve(std::size_t bytes) = 0;
  /// Gives a block back to the device (never one still in use: the allocator fences first).
  virtual void unreserve(void* block, std::size_t bytes) = 0;
  /// A fence after all device work submitted so far.
  virtual std::unique_ptr<memory_fence> fence() = 0;
};

/// Device memory with stream-ordered frees and no device allocation per step.
///
/// Blocks are rounded to size classes and kept in bins when freed. A freed block may still
/// be read or written by kernels already launched (the host drops its last reference once
/// the launch code ran, not once the kernel finished), so it is not reused at once: frees
/// collect in a pending batch. Once the batch holds 8 blocks or 1 MiB, the next allocation
/// (when no fence is in flight, or when it finds no ready block) puts a fence after the
/// device work submitted so far and moves the batch behind it; a miss before that reserves
/// a new block. A batch's blocks return to the bins when its fence is done. Fences are
/// rare: one per batch of frees (a CUDA fence records an event on every stream), so
/// a training loop that reuses its buffers reserves nothing after its first steps. Only
/// when the device is out of memory does an allocation wait for fences and give cached
/// blocks back before it tries again.
///
/// Thread-safe. Buffers hold the allocator's state alive, so they may outlive it.
class caching_allocator final : public allocator {
 public:
  /// Rounding: small requests to multiples of 512 bytes, those from 1 MiB up to multiples
  /// of 2 MiB (fewer distinct sizes, more reuse).
  static std::size_t round_size(std::size_t bytes);

  struct stats {
    std::size_t reserved_bytes = 0;  // held from the backend (in use, pending or cached)
    std::size_t in_use_bytes = 0;    // handed out and not yet freed
    std::uint64_t reserves = 0;      // backend reservations so far
    std::uint64_t unreserves = 0;    // blocks given back to the backend
    std::uint64_t fences = 0;        // fences put so far
    std::size_t pending_blocks = 0;  // freed, not yet behind a fence
    std::size_t fenced_blocks = 0;   // behind a fence not yet done
    std::size_t cached_blocks = 0;   // ready for reuse
  };

  explicit caching_allocator(std::unique_ptr<memory_backend> backend);
  ~caching_allocator() override;

  /// A block of at least `bytes` (at least one size class for 0). Throws pe::error when
  /// the backend has no memory even after the cache was emptied.
  std::shared_ptr<std::byte> allocate(std::size_t bytes) override;

  /// Gives every cached block (and those whose fence is done) back to the backend.
  void release_cached();
  /// release_cached() unless another thread holds the allocator right now (then nothing):
  /// for another allocator of the same device that ran out of memory.
  void try_release_cached();

  stats statistics() const;

  /// While the hold is open, frees are collected instead of reused and no fence is put (a
  /// capturing CUDA stream records nothing the device passes); an allocation the cache cannot
  /// serve reserves a new block, and fails rather than wait for fences when that fails. One
  /// hold open at a time (pe::error otherwise).
  std::shared_ptr<hold> hold_frees() override;

 private:
  struct state;
  class block_hold;
  std::shared_ptr<state> state_;
};

} // namespace pe

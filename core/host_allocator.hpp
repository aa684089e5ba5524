#pragma once

#include "core/allocator.hpp"

namespace pe {

/// Host memory, 64-byte aligned (BLAS and vectorised loops stay on their fast paths); large
/// blocks are pooled by host_block_cache, so a step's buffers are reused, not faulted in anew
/// (and small ones kept by the thread that frees them: small_block_cache).
class host_allocator final : public allocator {
 public:
  std::shared_ptr<std::byte> allocate(std::size_t bytes) override;

  /// The process-wide instance: tensors on CPU places allocate from it.
  static host_allocator& instance();
};

} // namespace pe

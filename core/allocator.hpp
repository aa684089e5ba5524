#pragma once

#include <cstddef>
#include <memory>

namespace pe {

/// Memory of one place. Buffers are freed when the last shared_ptr goes; callers that hand
/// a buffer to queued work keep a reference in that work (stream-ordered release).
class allocator {
 public:
  virtual ~allocator() = default;
  virtual std::shared_ptr<std::byte> allocate(std::size_t bytes) = 0;

  /// Keeps the blocks freed from now on out of reuse: what work captured for replay (a CUDA
  /// graph) needs, since the replays read and write the blocks the captured launches were
  /// given, whoever the host has freed them for since. close() ends the collecting (later
  /// frees are reused as usual); the blocks collected go back to the allocator when the
  /// hold is destroyed, after every replay. Null where the allocator cannot (host memory,
  /// which nothing captures).
  class hold {
   public:
    virtual ~hold() = default;
    virtual void close() = 0;
    /// Blocks collected so far.
    virtual std::size_t blocks() const = 0;
  };
  virtual std::shared_ptr<hold> hold_frees() { return nullptr; }
};

} // namespace pe

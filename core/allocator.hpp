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
};

} // namespace pe

#pragma once

#include <array>
#include <memory>

#include "devices/cpu/cpu_stream.hpp"
#include "devices/cpu/host_allocator.hpp"
#include "devices/device.hpp"

namespace pe {

/// A CPU place: host memory and three cpu_streams (compute, communication, copy), each a
/// thread of its own. Several CPU places in one process share the cores; each runs its
/// kernels on its own compute stream, so a place's kernels run back to back whichever
/// scheduler thread enqueued them.
class cpu_device final : public device {
 public:
  explicit cpu_device(place where);
  ~cpu_device() override;

  place where() const override { return place_; }
  allocator& memory() override { return host_allocator::instance(); }
  stream& get_stream(stream_kind kind) override;
  std::unique_ptr<event> make_event() override;
  void copy(stream& on, tensor& dst, const tensor& src) override;
  void stop() override;

 private:
  place place_;
  std::array<std::unique_ptr<cpu_stream>, 3> streams_; // by stream_kind
};

} // namespace pe

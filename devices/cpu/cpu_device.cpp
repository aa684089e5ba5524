#include "devices/cpu/cpu_device.hpp"

#include "devices/tensor.hpp"

namespace pe {

cpu_device::cpu_device(place where) : place_(where) {
  for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy})
    streams_[static_cast<std::size_t>(kind)] = std::make_unique<cpu_stream>(where, kind);
}

cpu_device::~cpu_device() {
  stop();
}

stream& cpu_device::get_stream(stream_kind kind) {
  return *streams_[static_cast<std::size_t>(kind)];
}

std::unique_ptr<event> cpu_device::make_event() {
  return std::make_unique<cpu_event>();
}

void cpu_device::copy(stream& on, tensor& dst, const tensor& src) {
  on.enqueue([&dst, &src] {
    if (!src.initialized()) throw error("copy: the source tensor has no value");
    dst.copy_from(src);
  });
}

void cpu_device::stop() {
  // Flag every stream before joining any: a stream blocked waiting on a sibling returns.
  for (auto& s : streams_) s->stop();
}

} // namespace pe

#include "devices/cuda/cuda_device.hpp"

#include <cstdlib>
#include <string>

#include "core/tensor.hpp"
#include "devices/cuda/cuda_capture.hpp"
#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/cuda_device_factory.hpp"
#include "devices/cuda/cuda_memory.hpp"
#include "devices/cuda/cuda_stream.hpp"
#include "devices/cuda/device_fill.hpp"
#include "devices/cuda/per_device.hpp"
#include "devices/gpu_runtime.hpp"

namespace pe {

namespace {

/// The event pool of a CUDA device, shared by its places' streams.
std::shared_ptr<cuda_event_pool> event_pool(int device) {
  return shared_per_device<cuda_event_pool>(device, [device] { return std::make_shared<cuda_event_pool>(device); });
}

/// Throws unless the place's CUDA device is there.
void check_present(place where) {
  if (where.type != place::kind::gpu)
    throw error("cuda device: " + to_string(where) + " is not a GPU place");
  const gpu_inventory gpus = query_gpus();
  if (gpus.count == 0) throw error("place " + to_string(where) + ": " + gpus.problem);
  if (where.device < 0 || where.device >= gpus.count)
    throw error("place " + to_string(where) + ": no CUDA device " +
                std::to_string(where.device) + " (this process sees " +
                std::to_string(gpus.count) + ", after CUDA_VISIBLE_DEVICES)");
}

bool on_gpu(const tensor& t) { return t.where().type == place::kind::gpu; }

/// PE_PINNED_STAGING=0 turns the staging of host-to-device copies off (to measure it).
bool staging_wanted() {
  const char* v = std::getenv("PE_PINNED_STAGING");
  return v == nullptr || std::string(v) != "0";
}

} // namespace

std::unique_ptr<device> open_cuda_device(place where) {
  return std::make_unique<cuda_device>(where);
}

cuda_device::cuda_device(place where) : place_(where) {
  check_present(where);
  memory_ = cuda_memory(where);
  events_ = event_pool(where.device);
  if (staging_wanted()) staging_ = pinned_staging_of(where.device, events_);
  clock_ = clock_of_device(where.device);
  for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy})
    streams_[static_cast<std::size_t>(kind)] = std::make_unique<cuda_stream>(where, kind, events_, clock_);
}

cuda_device::~cuda_device() {
  stop();
}

stream& cuda_device::get_stream(stream_kind kind) {
  return *streams_[static_cast<std::size_t>(kind)];
}

std::unique_ptr<event> cuda_device::make_event() {
  return std::make_unique<queued_event>();
}

void cuda_device::stop() {
  // All flagged before any is joined: a task on one stream may be waiting for a sibling.
  for (auto& s : streams_)
    if (s) s->request_stop();
  for (auto& s : streams_)
    if (s) s->stop();
}

stream::task cuda_device::copy_work(stream& on, tensor& dst, const tensor& src) {
  cudaStream_t handle = cuda_handle(on);
  const place here = place_;
  allocator* memory = memory_.get();
  pinned_staging* staging = staging_.get();
  return [&dst, &src, handle, here, memory, staging] {
    if (!src.initialized()) throw error("copy: the source tensor has no value");
    const bool from_gpu = on_gpu(src);
    const bool to_gpu = dst.initialized() ? on_gpu(dst) : !from_gpu;
    if (to_gpu && dst.initialized() && !(dst.where() == here))
      throw error("copy on " + to_string(here) + ": the destination lives on " +
                  to_string(dst.where()) + ", not on this place");
    if (to_gpu) dst.resize(src.type(), src.shape(), here, *memory);
    else dst.resize(src.type(), src.shape());
    const std::size_t bytes = src.bytes();
    if (bytes == 0) return;
    void* to = dst.raw();
    const void* from = src.raw();
    const std::string what = "copy " + to_string(src.where()) + " -> " + to_string(dst.where()) +
                             " on " + to_string(here);
    if (from_gpu && to_gpu && src.where().device != here.device) {
      check_cuda(cudaMemcpyPeerAsync(to, here.device, from, src.where().device, bytes, handle),
                 what);
      return;
    }
    if (staging != nullptr && to_gpu != from_gpu) {
      if (to_gpu) staging->copy_to_device(to, from, bytes, handle, what);
      else staging->copy_to_host(to, from, bytes, handle, what);
      return;
    }
    const cudaMemcpyKind kind = from_gpu ? (to_gpu ? cudaMemcpyDeviceToDevice
                                                   : cudaMemcpyDeviceToHost)
                                         : (to_gpu ? cudaMemcpyHostToDevice
                                                   : cudaMemcpyHostToHost);
    check_cuda(cudaMemcpyAsync(to, from, bytes, kind, handle), what);
  };
}

stream::task cuda_device::fill_work(stream& on, tensor& dst, std::vector<std::int64_t> shape, float value) {
  cudaStream_t handle = cuda_handle(on);
  const place here = place_;
  allocator* memory = memory_.get();
  return [&dst, shape = std::move(shape), value, handle, here, memory] {
    dst.resize(dtype::fp32, shape, here, *memory);
    check_cuda(launch_fill_fp32(dst.data<float>(), dst.numel(), value, handle),
               "fill of the loss gradient's scale on " + to_string(here));
  };
}

std::unique_ptr<stream_capture> cuda_device::make_capture() {
  return std::make_unique<cuda_capture>();
}

} // namespace pe

#pragma once

#include <array>
#include <memory>

#include "devices/caching_allocator.hpp"
#include "devices/cuda/cuda_event.hpp"
#include "devices/cuda/cuda_stream.hpp"
#include "devices/cuda/pinned_staging.hpp"
#include "devices/device.hpp"

namespace pe {

/// A GPU place: three CUDA streams of its own (compute, communication, copy), each driven
/// by its own host thread (cuda_stream: a queued_stream over a cuda_stream_backend),
/// events made of per-record CUDA events (queued_event), and the caching allocator of its
/// CUDA device, shared with the other logical places on that GPU.
class cuda_device final : public device {
 public:
  /// Throws pe::error naming the place and what is missing (driver, device) when the place
  /// cannot be opened.
  explicit cuda_device(place where);
  ~cuda_device() override;

  place where() const override { return place_; }
  allocator& memory() override { return *memory_; }
  stream& get_stream(stream_kind kind) override;
  std::unique_ptr<event> make_event() override;

  /// Direction: from `src`'s memory into `dst`'s. An initialised `dst` stays where it is
  /// (this device's place, or the host); an uninitialised one takes the other side from
  /// `src`: a host `src` is copied to this place, a GPU `src` to the host. A GPU `src` on
  /// another CUDA device is copied peer to peer. Host memory is pageable: copies between it
  /// and the GPU go through the device's pinned_staging (PE_PINNED_STAGING=0: straight, for
  /// comparison); a copy to the host holds the stream's host thread until it is done.
  stream::task copy_work(stream& on, tensor& dst, const tensor& src) override;
  /// A fill kernel on the device.
  stream::task fill_work(stream& on, tensor& dst, std::vector<std::int64_t> shape, float value) override;
  /// A CUDA graph (devices/cuda/cuda_capture.hpp).
  std::unique_ptr<stream_capture> make_capture() override;
  void stop() override;

  /// The device's caching allocator (statistics for tests and the benchmark).
  caching_allocator& cache() { return *memory_; }

 private:
  place place_;
  std::shared_ptr<caching_allocator> memory_;
  std::shared_ptr<cuda_event_pool> events_;
  std::shared_ptr<pinned_staging> staging_; // null: PE_PINNED_STAGING=0
  std::shared_ptr<cuda_clock> clock_;
  std::array<std::unique_ptr<cuda_stream>, 3> streams_; // by stream_kind
};

} // namespace pe

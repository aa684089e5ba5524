#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <cuda_runtime_api.h>

#include "devices/cuda/cuda_clock.hpp"
#include "devices/cuda/cuda_event.hpp"
#include "devices/queued_stream.hpp"

namespace pe {

/// The device side of a GPU place's stream (devices/queued_stream.hpp does the host side):
/// a cudaStream_t made with cudaStreamNonBlocking (it never syncs with the legacy default
/// stream) on the place's CUDA device; markers are pooled CUDA events (timing disabled),
/// recorded with cudaEventRecord, waited for with cudaStreamWaitEvent, queried with
/// cudaEventQuery. Timed work is bracketed by timing events of the device's clock
/// (cuda_clock). Live backends are tracked so that memory fences cover every stream.
class cuda_stream_backend final : public stream_backend {
 public:
  cuda_stream_backend(place where, stream_kind kind, std::shared_ptr<cuda_event_pool> events,
                      std::shared_ptr<cuda_clock> clock);
  ~cuda_stream_backend() override;

  void start() override;
  marker record() override;
  void wait(marker m) override;
  state query(marker m, std::string& message) override;
  void release(marker m) override;
  marker record_timed() override;
  stream::work_span take_span(marker begin, marker end) override;
  void drop_span(marker begin, marker end) override;
  std::string describe() const override;

  /// The CUDA stream (null until start()).
  cudaStream_t handle() const { return handle_; }
  const std::shared_ptr<cuda_event_pool>& event_pool() const { return events_; }

  /// What a kernel library keeps per stream (a cuBLAS or cuDNN handle bound to it), made by
  /// `make` on first use under `key`. Released with the stream, on its device, before the
  /// CUDA stream is destroyed: an executor's handles and their workspaces go with it.
  std::shared_ptr<void> library_state(const void* key, const std::function<std::shared_ptr<void>()>& make);

 private:
  /// An event of `pool` recorded on this stream.
  marker record_from(cuda_event_pool& pool);

  place place_;
  stream_kind kind_;
  std::shared_ptr<cuda_event_pool> events_;
  std::shared_ptr<cuda_clock> clock_;
  cudaStream_t handle_ = nullptr;
  std::mutex library_mutex_;
  std::map<const void*, std::shared_ptr<void>> library_states_;
};

/// A stream of a GPU place: the host side of queued_stream over a cuda_stream_backend.
/// Kernels and collectives launch onto handle() from their launch code.
class cuda_stream final : public queued_stream {
 public:
  /// Creates the CUDA stream on `where.device` (on the stream's thread). Throws pe::error
  /// naming the stream when that fails.
  cuda_stream(place where, stream_kind kind, std::shared_ptr<cuda_event_pool> events,
              std::shared_ptr<cuda_clock> clock)
      : queued_stream(where, kind, std::make_shared<cuda_stream_backend>(where, kind, std::move(events),
                                                                         std::move(clock))) {}

  cudaStream_t handle() const { return cuda_backend().handle(); }
  cuda_stream_backend& cuda_backend() const { return static_cast<cuda_stream_backend&>(backend()); }
};

/// The CUDA stream behind a pe::stream of a GPU place, for kernels' launch code
/// (ctx.on()). Throws pe::error when `s` is not a CUDA stream.
cudaStream_t cuda_handle(stream& s);

/// The backend of a GPU place's stream; throws pe::error when `s` is not a CUDA stream.
cuda_stream_backend& cuda_backend_of(stream& s);

} // namespace pe

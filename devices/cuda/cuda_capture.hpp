#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

#include <cuda_runtime_api.h>

#include "devices/stream_capture.hpp"

namespace pe {

/// A CUDA graph captured from the streams of the places of one CUDA device
/// (devices/stream_capture.hpp): cudaStreamBeginCapture on the origin stream in relaxed mode
/// (the caching allocator may still reserve a block with cudaMalloc from another thread),
/// cudaStreamEndCapture and cudaGraphInstantiate in end(), cudaGraphLaunch in replay().
/// Kernels' launch code that must wait for the device (a value read back to the host) or
/// hands host memory to a copy refuses to run while its stream captures
/// (kernels/cuda/cuda_context), which fails the capture: failure() says which.
class cuda_capture final : public stream_capture {
 public:
  cuda_capture() = default;
  ~cuda_capture() override;
  cuda_capture(const cuda_capture&) = delete;
  cuda_capture& operator=(const cuda_capture&) = delete;

  void begin(stream& origin) override;
  void rejoin(stream& joiner, stream& origin) override;
  void end(stream& origin) override;
  void await_end(stream& joiner) override;
  void replay(stream& origin) override;
  std::optional<std::string> failure() const override;
  std::size_t operations() const override { return operations_.load(); }

 private:
  void fail(const std::string& why);

  mutable std::mutex mutex_;
  std::optional<std::string> failure_; // guarded by mutex_
  bool ended_ = false;                 // guarded by mutex_: end()'s work has run
  std::condition_variable ended_cv_;
  std::atomic<std::size_t> operations_{0};
  // Written by the origin stream's thread in end(), read there by replay()'s launch code
  // and in the destructor (after the executor synchronized every stream). The graph itself
  // is destroyed once instantiated: the executable form does not need it.
  cudaGraphExec_t exec_ = nullptr;
};

} // namespace pe

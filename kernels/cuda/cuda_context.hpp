#pragma once

// What the CUDA kernels' host code needs of the kernel context: the CUDA stream to launch on,
// device memory for outputs and scratch, input checks, and launch / copy helpers. Implemented
// in cuda_context.cpp over the CUDA device (devices/cuda/cuda_stream.hpp's cuda_handle, the
// device's caching allocator through tensor::resize with an allocator).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include <cuda_runtime_api.h>

#include "kernels/kernel.hpp"

namespace pe {

/// The CUDA stream a GPU kernel launches onto: that of ctx.on(). Throws pe::error (prefixed
/// with the op) when the context is bound to no stream or to one that is not a CUDA stream.
cudaStream_t cuda_stream_of(const kernel_context& ctx);

} // namespace pe

namespace pe::cuda {

/// Gives `t` dtype `type` and `shape` in the device memory of the kernel's place, keeping its
/// buffer when that is on the place and large enough (tensor::resize's rule). Contents are
/// unspecified afterwards.
void resize_output(const kernel_context& ctx, tensor& t, dtype type, shape_t shape);

/// A scratch tensor in the place's device memory. Its buffer may be dropped by the host once
/// the kernels using it are launched: the caching allocator reuses a freed block only after
/// the device work submitted before the free has finished.
tensor scratch(const kernel_context& ctx, dtype type, shape_t shape);

/// Input `slot`[i], checked to be initialised and on a GPU place.
const tensor& gpu_input(const kernel_context& ctx, std::string_view slot, std::size_t i = 0);

/// gpu_input, also checked to be FP32.
const tensor& gpu_fp32_input(const kernel_context& ctx, std::string_view slot, std::size_t i = 0);

/// What a kernel library keeps per stream (its handle), for the kernel's stream: made by
/// `make` on first use under `key` and released with the stream (cuda_stream_backend).
std::shared_ptr<void> stream_library_state(const kernel_context& ctx, const void* key,
                                           const std::function<std::shared_ptr<void>()>& make);

/// Fails (naming the op) when the last launch on this thread failed.
void check_launch(const kernel_context& ctx, const char* kernel);

/// Throws pe::error prefixed with the op unless `status` is cudaSuccess.
void check(const kernel_context& ctx, cudaError_t status, const char* what);

/// Enqueues a device-to-device copy of `bytes` on the kernel's stream.
void copy_on_device(const kernel_context& ctx, void* dst, const void* src, std::size_t bytes);

/// Enqueues a host-to-device copy of `host` (a CPU tensor) into `dst`'s buffer, which must hold
/// host.bytes(); `host`'s buffer is kept alive until the copy has run.
void copy_from_host(const kernel_context& ctx, tensor& dst, const tensor& host);

/// Enqueues zeroing of `t`'s bytes.
void zero(const kernel_context& ctx, tensor& t);

/// Fails (naming the op and `why`) when the kernel's stream is being captured for replay
/// (devices/stream_capture.hpp): launch code that needs the host during the step, to wait
/// for a value or to hand over host memory drawn for this step, cannot be replayed.
void refuse_while_capturing(const kernel_context& ctx, const char* why);

/// The value at `device_value`, read back to the host: waits for the stream.
template <class T>
T read_back(const kernel_context& ctx, const T* device_value) {
  refuse_while_capturing(ctx, "it reads a value back to the host");
  T value{};
  check(ctx, cudaMemcpyAsync(&value, device_value, sizeof(T), cudaMemcpyDeviceToHost, cuda_stream_of(ctx)),
        "cudaMemcpyAsync (device to host)");
  check(ctx, cudaStreamSynchronize(cuda_stream_of(ctx)), "cudaStreamSynchronize");
  return value;
}

/// The value of a one-element device tensor, read back to the host: waits for the stream.
/// For the rare inputs a kernel's host code must see (dropout's Seed).
template <class T>
T read_scalar(const kernel_context& ctx, const tensor& t) {
  return read_back(ctx, t.data<T>());
}

} // namespace pe::cuda

#include "kernels/cuda/cuda_context.hpp"

#include <memory>
#include <string>

#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/cuda_stream.hpp"
#include "devices/device.hpp"

namespace pe {

cudaStream_t cuda_stream_of(const kernel_context& ctx) {
  if (ctx.on() == nullptr) ctx.fail("a GPU kernel needs a stream, but its context is bound to none");
  try {
    return cuda_handle(*ctx.on());
  } catch (const error& e) {
    ctx.fail(e.what());
  }
}

} // namespace pe

namespace pe::cuda {

void resize_output(const kernel_context& ctx, tensor& t, dtype type, shape_t shape) {
  if (ctx.dev() == nullptr)
    ctx.fail("a GPU kernel needs its device to allocate outputs, but its context is bound to none");
  t.resize(type, std::move(shape), ctx.where(), ctx.dev()->memory());
}

tensor scratch(const kernel_context& ctx, dtype type, shape_t shape) {
  tensor t;
  resize_output(ctx, t, type, std::move(shape));
  return t;
}

const tensor& gpu_input(const kernel_context& ctx, std::string_view slot, std::size_t i) {
  const tensor& t = ctx.input(slot, i);
  const std::string name = std::string(slot) + (i > 0 ? "[" + std::to_string(i) + "]" : "");
  if (!t.initialized()) ctx.fail("input " + name + " is uninitialised");
  if (t.where().type != place::kind::gpu)
    ctx.fail("input " + name + " is on " + to_string(t.where()) + ", not in GPU memory");
  return t;
}

const tensor& gpu_fp32_input(const kernel_context& ctx, std::string_view slot, std::size_t i) {
  const tensor& t = gpu_input(ctx, slot, i);
  if (t.type() != dtype::fp32)
    ctx.fail(std::string(slot) + (i > 0 ? "[" + std::to_string(i) + "]" : "") +
             " must be FP32, got " + to_string(t.type()));
  return t;
}

std::shared_ptr<void> stream_library_state(const kernel_context& ctx, const void* key,
                                           const std::function<std::shared_ptr<void>()>& make) {
  if (ctx.on() == nullptr) ctx.fail("a GPU kernel needs a stream, but its context is bound to none");
  cuda_stream_backend* backend = nullptr;
  try {
    backend = &cuda_backend_of(*ctx.on());
  } catch (const error& e) {
    ctx.fail(e.what());
  }
  return backend->library_state(key, make);
}

void check(const kernel_context& ctx, cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    ctx.fail(std::string(what) + " on " + to_string(ctx.where()) + ": " + cuda_error_text(status));
}

void check_launch(const kernel_context& ctx, const char* kernel) {
  check(ctx, cudaGetLastError(), (std::string("launching ") + kernel).c_str());
}

void copy_on_device(const kernel_context& ctx, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  check(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda_stream_of(ctx)),
        "cudaMemcpyAsync (device to device)");
}

namespace {

/// Drops the host buffer a finished copy read (a host function on the stream: no CUDA call).
void release_host_buffer(void* holder) { delete static_cast<tensor*>(holder); }

} // namespace

void refuse_while_capturing(const kernel_context& ctx, const char* why) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  check(ctx, cudaStreamIsCapturing(cuda_stream_of(ctx), &capturing), "cudaStreamIsCapturing");
  if (capturing != cudaStreamCaptureStatusNone)
    ctx.fail(std::string("cannot run in a captured step (a CUDA graph): ") + why);
}

void copy_from_host(const kernel_context& ctx, tensor& dst, const tensor& host) {
  refuse_while_capturing(ctx, "it copies values drawn on the host for this step");
  if (host.bytes() == 0) return;
  const cudaStream_t s = cuda_stream_of(ctx);
  check(ctx, cudaMemcpyAsync(dst.raw(), host.raw(), host.bytes(), cudaMemcpyHostToDevice, s),
        "cudaMemcpyAsync (host to device)");
  auto keep = std::make_unique<tensor>(host);
  check(ctx, cudaLaunchHostFunc(s, release_host_buffer, keep.get()), "cudaLaunchHostFunc");
  keep.release();
}

void zero(const kernel_context& ctx, tensor& t) {
  if (t.bytes() == 0) return;
  check(ctx, cudaMemsetAsync(t.raw(), 0, t.bytes(), cuda_stream_of(ctx)), "cudaMemsetAsync");
}

} // namespace pe::cuda

#pragma once

// What the oneDNN kernels (dnnl_conv_kernels.cpp, dnnl_pool_kernels.cpp,
// dnnl_norm_kernels.cpp) share: the calling thread's engine and stream, plain FP32 memory
// over tensors, and the translation of oneDNN's errors. Internal to kernels/cpu.

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dnnl.hpp>

#include "kernels/kernel.hpp"

namespace pe {

/// The kernels of each oneDNN file; register_dnnl_kernels calls them all.
void register_dnnl_conv_kernels(kernel_registry& r); // conv2d, depthwise_conv2d, their grads
void register_dnnl_pool_kernels(kernel_registry& r); // pool2d, pool2d_grad
void register_dnnl_norm_kernels(kernel_registry& r); // batch_norm, batch_norm_grad
void register_dnnl_eltwise_kernels(kernel_registry& r); // gelu, gelu_grad

/// Runs `primitive` with `args` on the calling thread's oneDNN stream and waits for it.
///
/// Each place runs its kernels on one device thread, so each thread gets its own engine and
/// stream (thread_local): a oneDNN stream must not be used by two threads at once, and a
/// CPU engine is cheap. Primitives are not kept by the kernels: creating one from its
/// primitive descriptor hits oneDNN's process-wide primitive cache, whose key covers the
/// descriptor, the engine kind and the thread count, so every place and step reuses the
/// code oneDNN generated once.
///
/// Threads: Debian's libdnnl uses OpenMP (DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP), whose team
/// size is a per-thread setting. Before each run the calling thread's is set to
/// blas_threads() (kernels/cpu/blas.hpp, the CLI's --blas-threads, 1 by default) so that
/// oneDNN honours the same limit as GEMM and never oversubscribes the cores the places
/// already occupy.
void dnnl_run(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& args);

/// The OpenMP team size oneDNN uses on the calling thread: blas_threads() as of this
/// thread's last oneDNN kernel (OpenMP's default, the core count, before the first).
int dnnl_threads();

/// The calling thread's CPU engine (see dnnl_run), with its OpenMP thread count applied:
/// primitive descriptors are created on it, and the count is part of their cache key.
const dnnl::engine& dnnl_engine();

/// A dense row-major FP32 descriptor of `dims` (oneDNN's plain nchw, oihw, ... layouts).
dnnl::memory::desc dnnl_plain_desc(const shape_t& dims);

/// oneDNN memory over `t`'s buffer, described by `md` (no copy). oneDNN takes a mutable
/// handle even for what it only reads; the kernels pass inputs only in input arguments.
dnnl::memory dnnl_memory(const dnnl::memory::desc& md, const tensor& t);

/// Scratch memory of descriptor `md` (reordered operands, results in a blocked layout):
/// inside a dnnl_scratch_scope (every with_dnnl body), a block of host_block_cache given back
/// when the scope ends, so a step's megabyte reorders reuse the last step's pages instead of
/// oneDNN mallocing fresh ones each time (the built-in CNN on 2 places at batch 128 took
/// 8,000-12,000 page faults per step before);
/// outside one, memory oneDNN owns.
dnnl::memory dnnl_scratch(const dnnl::memory::desc& md);

/// While alive, dnnl_scratch on this thread takes pooled blocks, given back at its end. The
/// dnnl::memory objects over them must not outlive it. Scopes nest.
class dnnl_scratch_scope {
 public:
  dnnl_scratch_scope();
  ~dnnl_scratch_scope();
  dnnl_scratch_scope(const dnnl_scratch_scope&) = delete;
  dnnl_scratch_scope& operator=(const dnnl_scratch_scope&) = delete;

 private:
  std::vector<std::pair<void*, std::size_t>> blocks_;
  std::vector<std::pair<void*, std::size_t>>* outer_;
};

/// `plain`'s dims with format_tag::any: lets a primitive descriptor pick the layout its
/// fastest implementation wants (blocked nChw8c, OIhw8i8o, ...) instead of gemm on plain.
dnnl::memory::desc dnnl_any(const dnnl::memory::desc& plain);

/// `plain`'s 4D dims in the channel-blocked layout of this CPU's jit kernels (nChw16c with
/// AVX-512, nChw8c otherwise): pooling and batch normalization take no format_tag::any for
/// their source, and on plain NCHW oneDNN 2.6 only has its slow reference-like kernels.
dnnl::memory::desc dnnl_blocked(const dnnl::memory::desc& plain);

/// What a primitive reads for `plain` when it wants layout `md`: `plain` itself when the
/// layouts agree, else a reordered copy in scratch memory. Tensors between ops stay plain
/// NCHW; only the kernels see oneDNN's layouts.
dnnl::memory dnnl_reordered(const dnnl::memory& plain, const dnnl::memory::desc& md);

/// Where a primitive writes a result of layout `md` that belongs in `plain`: `plain` itself
/// when the layouts agree, else scratch memory that dnnl_store copies back.
dnnl::memory dnnl_result(const dnnl::memory& plain, const dnnl::memory::desc& md);

/// Reorders `result` (from dnnl_result) into `plain`; nothing when it is `plain`.
void dnnl_store(const dnnl::memory& result, const dnnl::memory& plain);

/// Runs `body`, reporting a dnnl::error (a configuration oneDNN does not implement) through
/// `ctx.fail`.
template <class F>
void with_dnnl(const kernel_context& ctx, F&& body) {
  try {
    const dnnl_scratch_scope scratch; // the body's dnnl::memory objects end before it
    body();
  } catch (const dnnl::error& e) {
    ctx.fail(std::string("oneDNN: ") + e.what());
  }
}

} // namespace pe

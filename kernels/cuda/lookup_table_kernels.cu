// CUDA kernels of lookup_table_v2 and lookup_table_v2_grad, and of v1's lookup_table and
// lookup_table_grad (the same kernels). Inputs and attributes are read and
// checked by kernels/lookup_table_ops.hpp's fronts, shared with the CPU kernels
// (kernels/cpu/lookup_table_kernels.cpp).
// - The forward is an element map over Out [N, D] (N ids): Out[i, j] = W[Ids[i], j], 0 for
//   padding_idx. An id outside [0, V) cannot stop the kernel with a message (that would need a
//   host round trip): its row of Out is NaN instead, which --check-nan-inf and the non-finite
//   loss check report (as the loss kernels do for a bad label, loss_plans.hpp).
// - The grad is deterministic without a sort and without atomics: a block per row v of W
//   zeroes its row and scans all the ids in order, a chunk of blockDim ids at a time; a chunk
//   that holds v (__syncthreads_count) has its matches added to the row by the block's threads,
//   one column each (strided over D), in index order. So every element of W@GRAD gets the same
//   FP32 additions in the same order as the CPU kernel's: bit-identical. The padding row stays
//   zero and an id outside [0, V) matches no row (no gradient, as on CPU it would fail). Cost:
//   every block reads all N ids (V * N id reads, mostly from L2), and N * D additions in all.
// Compiled and linked by every CUDA build, not yet run on a GPU: cuda_kernels_gpu_test's
// LookupTable case compares it with the CPU kernels on a GPU machine (it skips without one).
#include <cstdint>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/lookup_table_ops.hpp"

namespace pe::cuda {

namespace {

/// The ids as the device sees them, of Ids' element type; `padding` only when has_padding.
template <class Id>
struct lookup_ids {
  const Id* ids;
  std::int64_t rows, width;
  bool has_padding;
  std::int64_t padding;

  PE_HOST_DEVICE bool is_padding(std::int64_t id) const { return has_padding && id == padding; }
};

template <class Id>
lookup_ids<Id> device_ids(const lookup_geometry& g) {
  return {g.ids.data<Id>(), g.rows, g.width, g.padding_row != no_padding, g.padding_row};
}

/// Out[k] for k < N * D: W's element, 0 on the padding row, NaN for an id outside [0, V).
template <class Id>
struct lookup_map {
  lookup_ids<Id> in;
  const float* w;
  float* out;

  PE_HOST_DEVICE void operator()(std::int64_t k) const {
    const std::int64_t i = k / in.width, j = k - i * in.width;
    const auto id = static_cast<std::int64_t>(in.ids[i]);
    if (in.is_padding(id))
      out[k] = 0.f;
    else if (id < 0 || id >= in.rows)
      out[k] = __builtin_nanf("");
    else
      out[k] = w[id * in.width + j];
  }
};

constexpr unsigned lookup_grad_threads = 256;

/// W@GRAD, a block of lookup_grad_threads per row of W (grid-stride over the rows); see the
/// file's comment. Every loop bound and branch around the barriers is the same for the whole
/// block.
template <class Id>
__global__ void lookup_grad_kernel(lookup_ids<Id> in, std::int64_t n, const float* dout,
                                   float* dw) {
  __shared__ bool matched[lookup_grad_threads];
  const std::int64_t width = in.width, threads = blockDim.x;
  for (std::int64_t v = blockIdx.x; v < in.rows; v += gridDim.x) {
    float* row = dw + v * width;
    for (std::int64_t j = threadIdx.x; j < width; j += threads) row[j] = 0.f;
    if (in.is_padding(v)) continue;
    for (std::int64_t base = 0; base < n; base += threads) {
      const std::int64_t i = base + threadIdx.x;
      const bool hit = i < n && static_cast<std::int64_t>(in.ids[i]) == v;
      matched[threadIdx.x] = hit;
      if (__syncthreads_count(hit) != 0) { // also the barrier after the writes to matched
        const std::int64_t chunk = n - base < threads ? n - base : threads;
        for (std::int64_t j = threadIdx.x; j < width; j += threads) {
          float sum = row[j];
          for (std::int64_t k = 0; k < chunk; ++k)
            if (matched[k]) sum += dout[(base + k) * width + j];
          row[j] = sum;
        }
      }
      __syncthreads(); // the next chunk rewrites matched
    }
  }
}

template <class Id>
void gather(kernel_context& ctx, const lookup_front& f, tensor& out) {
  for_each(ctx, out.numel(),
           lookup_map<Id>{device_ids<Id>(f.g), f.w.data<float>(), out.data<float>()});
}

template <class Id>
void scatter(kernel_context& ctx, const lookup_grad_front& f, tensor& dw) {
  lookup_grad_kernel<Id><<<lane_blocks(f.g.rows), lookup_grad_threads, 0, cuda_stream_of(ctx)>>>(
      device_ids<Id>(f.g), f.g.ids.numel(), f.out_grad.data<float>(), dw.data<float>());
  check_launch(ctx, "lookup_grad_kernel");
}

void lookup_forward(kernel_context& ctx) {
  const lookup_front f = lookup_front_of(ctx, gpu_fp32_input, gpu_input);
  write_unaliased(ctx.output("Out"), {&f.w, &f.g.ids}, [&](tensor& out) {
    resize_output(ctx, out, dtype::fp32, f.g.out_dims());
    if (f.g.ids.type() == dtype::int64)
      gather<std::int64_t>(ctx, f, out);
    else
      gather<std::int32_t>(ctx, f, out);
  });
}

void lookup_backward(kernel_context& ctx) {
  expect_dense_lookup(ctx, ctx.attrs().get<bool>("is_sparse"));
  const lookup_grad_front f = lookup_grad_front_of(ctx, gpu_fp32_input, gpu_input);
  write_unaliased(ctx.output("W@GRAD"), {&f.out_grad, &f.g.ids}, [&](tensor& dw) {
    resize_output(ctx, dw, dtype::fp32, f.w_dims);
    if (dw.numel() == 0) return;
    if (f.g.ids.type() == dtype::int64)
      scatter<std::int64_t>(ctx, f, dw);
    else
      scatter<std::int32_t>(ctx, f, dw);
  });
}

} // namespace

void register_lookup_table_kernels(kernel_registry& r) {
  r.add("lookup_table_v2", place::kind::gpu, lookup_forward);
  r.add("lookup_table_v2_grad", place::kind::gpu, lookup_backward);
  r.add("lookup_table", place::kind::gpu, lookup_forward); // v1: the fronts read Ids as v1's
  r.add("lookup_table_grad", place::kind::gpu, lookup_backward);
}

} // namespace pe::cuda

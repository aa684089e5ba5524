#pragma once

// The one launcher of the element-wise CUDA kernels: a grid-stride loop running op(i) for
// i < n, op being an element map (element_maps.hpp, broadcast_maps.hpp, ...) passed by value.
// And the block-reduction launchers: one block per reduced element j, running a plan's
// partial(j, t, threads) on every thread, the tree of block_reduce.hpp in shared memory, and
// finish(j, total) on thread 0; or, for few elements of many terms, several blocks per
// element and a finishing kernel (reduce_blocks_split).

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/block_reduce.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/grid_math.hpp"

namespace pe::cuda {

template <class Op>
__global__ void for_each_kernel(std::int64_t n, Op op) {
  grid_stride(n, blockIdx.x, threadIdx.x, gridDim.x, blockDim.x, op);
}

/// Launches op(i) for i < n onto the kernel's stream (nothing for n <= 0).
template <class Op>
void for_each(const kernel_context& ctx, std::int64_t n, const Op& op) {
  if (n <= 0) return;
  const auto blocks = static_cast<unsigned>(grid_blocks(n));
  for_each_kernel<<<blocks, element_threads, 0, cuda_stream_of(ctx)>>>(n, op);
  check_launch(ctx, "an element-wise kernel");
}

/// The block's reduction of each thread's `value` with `op` (all threads get the result).
/// blockDim.x must be reduce_threads.
template <class T, class Op>
__device__ T block_reduce(T value, Op op) {
  __shared__ T shared[reduce_threads];
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    tree_step(shared, threadIdx.x, half, op);
    __syncthreads();
  }
  const T result = shared[0];
  __syncthreads();
  return result;
}

template <class Plan>
__global__ void reduce_blocks_kernel(std::int64_t blocks, Plan plan) {
  for (std::int64_t j = blockIdx.x; j < blocks; j += gridDim.x) {
    const double total = block_reduce(plan.partial(j, threadIdx.x, blockDim.x), plus_op{});
    if (threadIdx.x == 0) plan.finish(j, total);
  }
}

/// Launches a block-reduction plan over `blocks` reduced elements.
template <class Plan>
void reduce_blocks(const kernel_context& ctx, std::int64_t blocks, const Plan& plan) {
  if (blocks <= 0) return;
  reduce_blocks_kernel<<<static_cast<unsigned>(std::min(blocks, max_blocks)), reduce_threads, 0,
                         cuda_stream_of(ctx)>>>(blocks, plan);
  check_launch(ctx, "a block reduction");
}

template <class Plan>
__global__ void reduce_chunks_kernel(std::int64_t blocks, std::int64_t chunks, Plan plan, double* sums) {
  const std::int64_t all = blocks * chunks;
  const auto virtual_threads = static_cast<unsigned>(chunks) * blockDim.x;
  for (std::int64_t b = blockIdx.x; b < all; b += gridDim.x) {
    const std::int64_t j = b / chunks, k = b % chunks;
    const double sum = block_reduce(plan.partial(j, static_cast<unsigned>(k) * blockDim.x + threadIdx.x,
                                                 virtual_threads),
                                    plus_op{});
    if (threadIdx.x == 0) sums[b] = sum;
  }
}

template <class Plan>
__global__ void finish_chunks_kernel(std::int64_t blocks, std::int64_t chunks, Plan plan, const double* sums) {
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < blocks;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    double total = 0;
    for (std::int64_t k = 0; k < chunks; ++k) total += sums[j * chunks + k];
    plan.finish(j, total);
  }
}

/// reduce_blocks for few reduced elements of many terms each (`terms` each): each element's
/// terms split over split_chunks(blocks, terms) blocks, chunk k's threads running the plan's
/// partial as the virtual threads k * reduce_threads + t of chunks * reduce_threads, their
/// sums written to a scratch buffer and added per element in chunk order by a second kernel
/// that calls finish: deterministic, the same terms in another order of addition than one
/// block's (simulate_split_reduce replays it on the host). For plans whose partial is a
/// strided_fold over the element's terms (thread t of threads takes terms t, t + threads,
/// ...), which is what makes the virtual threads cover every term once.
template <class Plan>
void reduce_blocks_split(const kernel_context& ctx, std::int64_t blocks, std::int64_t terms, const Plan& plan) {
  const std::int64_t chunks = split_chunks(blocks, terms);
  if (chunks <= 1) {
    reduce_blocks(ctx, blocks, plan);
    return;
  }
  tensor sums = scratch(ctx, dtype::fp64, {blocks * chunks});
  reduce_chunks_kernel<<<static_cast<unsigned>(std::min(blocks * chunks, max_blocks)), reduce_threads, 0,
                         cuda_stream_of(ctx)>>>(blocks, chunks, plan, sums.data<double>());
  check_launch(ctx, "a split block reduction");
  finish_chunks_kernel<<<static_cast<unsigned>(std::min((blocks + 127) / 128, max_blocks)), 128, 0,
                         cuda_stream_of(ctx)>>>(blocks, chunks, plan, sums.data<double>());
  check_launch(ctx, "a split block reduction's finish");
}

/// Grid size for kernels that give each of `count` lanes a block.
inline unsigned lane_blocks(std::int64_t count) {
  return static_cast<unsigned>(std::min(count, max_blocks));
}

} // namespace pe::cuda

#pragma once

// The index math of the grid-stride launcher (grid_stride.cuh), without CUDA: how many blocks
// a launch over n elements gets, and which elements thread t of block b visits (b * threads +
// t, then steps of blocks * threads). The host tests check that every element is visited
// exactly once.

#include <cstdint>

#include "kernels/cuda/host_device.hpp"

namespace pe::cuda {

constexpr unsigned element_threads = 256;
constexpr std::int64_t max_blocks = 65535;

/// Blocks of `threads` for n > 0 elements: one element per thread up to max_blocks.
PE_HOST_DEVICE inline std::int64_t grid_blocks(std::int64_t n, unsigned threads = element_threads) {
  const std::int64_t wanted = (n + threads - 1) / threads;
  return wanted < max_blocks ? wanted : max_blocks;
}

/// Calls op(i) for the elements (thread, block) visits in a grid of `blocks` x `threads`.
template <class Op>
PE_HOST_DEVICE void grid_stride(std::int64_t n, std::int64_t block, unsigned thread,
                                std::int64_t blocks, unsigned threads, const Op& op) {
  const std::int64_t step = blocks * threads;
  for (std::int64_t i = block * threads + thread; i < n; i += step) op(i);
}

} // namespace pe::cuda

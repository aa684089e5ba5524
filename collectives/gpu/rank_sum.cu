#include "collectives/gpu/rank_sum.hpp"

#include <algorithm>
#include <string>

#include <cuda_runtime_api.h>

#include "core/error.hpp"

namespace pe {

namespace {

/// Passed by value: kernel parameters carry the pointers, no device array to allocate.
struct rank_buffers {
  const float* sources[max_rank_buffers];
  float* destinations[max_rank_buffers];
  int source_count;
  int destination_count;
};

__global__ void rank_sum_kernel(rank_buffers b, std::int64_t count) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    float sum = b.sources[0][i];
    for (int k = 1; k < b.source_count; ++k) sum += b.sources[k][i];
    for (int k = 0; k < b.destination_count; ++k) b.destinations[k][i] = sum;
  }
}

} // namespace

void launch_rank_sum(const float* const* sources, int source_count, float* const* destinations,
                     int destination_count, std::int64_t count, void* stream) {
  if (source_count < 1 || source_count > max_rank_buffers || destination_count > max_rank_buffers)
    throw error("rank sum: " + std::to_string(source_count) + " sources and " +
                std::to_string(destination_count) + " destinations, at most " +
                std::to_string(max_rank_buffers) + " each");
  if (count <= 0 || destination_count <= 0) return;
  rank_buffers b{};
  std::copy(sources, sources + source_count, b.sources);
  std::copy(destinations, destinations + destination_count, b.destinations);
  b.source_count = source_count;
  b.destination_count = destination_count;
  constexpr unsigned threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((count + threads - 1) / threads, 65535));
  rank_sum_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(b, count);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw error(std::string("rank sum: the kernel launch failed: ") + cudaGetErrorString(e));
}

} // namespace pe

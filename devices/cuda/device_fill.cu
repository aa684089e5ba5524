#include "devices/cuda/device_fill.hpp"

namespace pe {

namespace {

__global__ void fill_fp32(float* data, std::int64_t count, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    data[i] = value;
}

} // namespace

cudaError_t launch_fill_fp32(float* data, std::int64_t count, float value, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  constexpr int threads = 256;
  const std::int64_t wanted = (count + threads - 1) / threads;
  const int blocks = static_cast<int>(wanted < 1024 ? wanted : 1024);
  fill_fp32<<<blocks, threads, 0, stream>>>(data, count, value);
  return cudaGetLastError();
}

} // namespace pe

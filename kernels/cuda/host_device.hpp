#pragma once

// PE_HOST_DEVICE marks a function that runs on the host and on the GPU: `__host__ __device__`
// under nvcc, nothing under a host compiler. The element-wise functors and the index math of
// the CUDA kernels are written with it, so that the host tests (g++, no GPU) run the very code
// the kernels run.

#if defined(__CUDACC__)
#define PE_HOST_DEVICE __host__ __device__
#else
#define PE_HOST_DEVICE
#endif

#pragma once

// The CUDA kernels of GPU places. No CUDA header here: kernels/kernel.cpp (built by the host
// compiler into pe_kernels) includes this file to register them in the global registry.

namespace pe {

class kernel_registry;

/// Adds a GPU kernel (place::kind::gpu) for every op type the CPU registry has.
/// Each kernel's host code runs on its stream's thread, checks its inputs as the CPU kernel
/// does, allocates its outputs from the place's device memory and launches onto the CUDA
/// stream of the kernel context (cuda_context.hpp).
void register_cuda_kernels(kernel_registry& r);

} // namespace pe

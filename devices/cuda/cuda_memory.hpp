#pragma once

#include <memory>

#include "devices/caching_allocator.hpp"

namespace pe {

class cuda_stream_backend;

/// Every live CUDA stream of the process. A fence of the device memory records an event on
/// each, so that a block freed by the host is reused only after every kernel or copy
/// already launched on any stream (another place's peer copy too) has finished with it.
void track_stream(cuda_stream_backend* s);
void untrack_stream(cuda_stream_backend* s);

/// The caching allocator of CUDA device `device` (cudaMalloc/cudaFree behind the bins),
/// shared by every place on that device (logical places of gpu:0x4 share their GPU's
/// memory). Made on first use; lives while a device or a buffer holds it.
std::shared_ptr<caching_allocator> cuda_memory(int device);

} // namespace pe

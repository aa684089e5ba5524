#pragma once

#include <memory>

#include "core/place.hpp"
#include "devices/caching_allocator.hpp"

namespace pe {

class cuda_stream_backend;

/// Every live CUDA stream of the process. A fence of the device memory records an event on
/// each, so that a block freed by the host is reused only after every kernel or copy
/// already launched on any stream (another place's peer copy too) has finished with it.
void track_stream(cuda_stream_backend* s);
void untrack_stream(cuda_stream_backend* s);

/// The caching allocator of GPU place `where` (cudaMalloc/cudaFree behind the bins on its
/// CUDA device), one per place: the logical places of gpu:0x2 each have their own, since a
/// shared one's lock was where their stream threads waited for each other (on an H100, two
/// places' threads spent 0.3 ms a step of the MLP waiting for it, one place 2 us). Blocks are
/// still reused only behind fences on every stream of the process, so memory one place
/// frees is safe from the other's work too. A place out of device memory first has the
/// other places on its GPU give back their cached blocks. Made on first use; lives while a
/// device or a buffer holds it.
std::shared_ptr<caching_allocator> cuda_memory(place where);

} // namespace pe

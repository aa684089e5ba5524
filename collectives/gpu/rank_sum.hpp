#pragma once
// The shared-GPU communicator's kernel behind a plain C++ launcher (no CUDA types: the
// stream travels as void*).
#include <cstdint>

namespace pe {

/// At most this many buffers take part in one rank sum (logical places on one GPU).
inline constexpr int max_rank_buffers = 32;

/// Every destination gets sum_k sources[k][i] for i < count, summed in source order (so the
/// result is the same whatever the launch geometry), on `stream` (a cudaStream_t). A
/// destination may be one of the sources. Throws pe::error when the launch fails or more
/// than max_rank_buffers sources or destinations are given.
void launch_rank_sum(const float* const* sources, int source_count, float* const* destinations,
                     int destination_count, std::int64_t count, void* stream);

} // namespace pe

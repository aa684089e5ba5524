#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace pe {

/// Enqueues on `stream` a kernel that sets `count` floats at `data` to `value`; returns the
/// launch's status. The loss gradient's scale, filled on the device so that no host buffer
/// is read by a captured step's replays.
cudaError_t launch_fill_fp32(float* data, std::int64_t count, float value, cudaStream_t stream);

} // namespace pe

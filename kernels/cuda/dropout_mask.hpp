#pragma once

// The host side of the CUDA dropout kernel: the mask the CPU kernel draws, with the same
// generator and seed sequence (kernels/dropout_ops.hpp, shared by both), so that a step drops
// the same elements on a GPU place as on a CPU place with the same index. The GPU kernel
// copies the mask to the device and applies it there. The host tests check this mask against
// the CPU kernel's Mask output.

#include "kernels/dropout_ops.hpp"

namespace pe::cuda {

using pe::draw_dropout_mask;
using pe::dropout_generator;

} // namespace pe::cuda

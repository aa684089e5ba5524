#pragma once

#include <memory>

#include "devices/device.hpp"

namespace pe {

/// Opens the CUDA device of a GPU place (its streams, events and memory on the place's CUDA
/// device ordinal). Throws pe::error naming the place and what is missing when the driver
/// or the device is not there. Plain C++, so devices/device.cpp registers it without CUDA
/// headers.
std::unique_ptr<device> open_cuda_device(place where);

} // namespace pe

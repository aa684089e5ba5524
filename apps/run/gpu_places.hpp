#pragma once

#include <string>
#include <vector>

#include "core/place.hpp"
#include "devices/gpu_runtime.hpp"

namespace pe {

/// The GPU forms of --places, for the CUDA devices `gpus` shows:
///   gpu:all      one place per visible device (CUDA_VISIBLE_DEVICES applies);
///   gpu:0,1      one place per listed device;
///   gpu:0x4      four logical places on device 0, each with its own streams (so that
///                multi-place logic runs on one GPU); items combine: gpu:0x2,1x2.
/// Places are numbered 0, 1, ... in that order; each knows its device ordinal. Throws
/// pe::error (the message starts with "--places") for bad syntax, a device listed twice,
/// a build without CUDA, no driver or no device, or a device beyond the count.
std::vector<place> parse_gpu_places(const std::string& text, const gpu_inventory& gpus);

/// What --help says of GPU places in this build.
std::string gpu_places_help();

/// The --places text of GPU places, as parse_gpu_places reads it back: "gpu:0,1", "gpu:0x4".
std::string gpu_places_text(const std::vector<place>& places);

} // namespace pe

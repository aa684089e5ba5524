#pragma once

#include <string>
#include <vector>

#include "core/place.hpp"
#include "core/place_list.hpp"
#include "devices/gpu_runtime.hpp"

namespace pe {

/// The places of a parsed --places list (core/place_list.hpp), a GPU list checked against
/// the CUDA devices `gpus` shows; a CPU list asks nothing of `gpus`.
std::vector<place> list_places(const place_list& list, const std::string& text,
                               const gpu_inventory& gpus);

/// The GPU forms of --places (gpu:all, gpu:N[,M...], gpu:NxK; core/place_list.hpp has the
/// syntax), for the CUDA devices `gpus` shows. Throws pe::error (the message starts with
/// "--places") for bad syntax, a device listed twice, a build without CUDA, no driver or no
/// device, or a device beyond the count.
std::vector<place> parse_gpu_places(const std::string& text, const gpu_inventory& gpus);

/// What --help says of GPU places in this build.
std::string gpu_places_help();

/// The --places text of GPU places, as parse_gpu_places reads it back: "gpu:0,1", "gpu:0x4"
/// (place_list_text).
std::string gpu_places_text(const std::vector<place>& places);

} // namespace pe

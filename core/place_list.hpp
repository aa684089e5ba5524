#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/place.hpp"

namespace pe {

/// The one parser of place texts, shared by pe-actor-run's --places (apps/run) and the
/// Python package's place names (python/places.cpp), so both read the same numbers the same
/// way and the syntax and its messages live in one file. Plain text in, places out: asking
/// the CUDA runtime how many GPUs there are is the caller's (devices/gpu_runtime.hpp), so
/// this stays in pe_core and a CPU-only list never touches a GPU runtime.
///
/// A place list (--places) is one of
///   cpu:N        N >= 1 CPU places;
///   gpu:all      one place per visible CUDA device (CUDA_VISIBLE_DEVICES applies);
///   gpu:0,1      one place per listed device;
///   gpu:0x4      four logical places on device 0, each with its own streams (so that
///                multi-place logic runs on one GPU); items combine: gpu:0x2,1x2.
/// Places are numbered 0, 1, ... in that order; a GPU place knows its device ordinal.
/// Device numbers and counts are decimals of up to 5 digits.

/// `count` logical places on CUDA device `device`: one item of gpu:N[,M...] / gpu:NxK.
struct gpu_place_item {
  int device = 0;
  int count = 1;
};

/// A place list as written, before any GPU is asked about.
struct place_list {
  place::kind type = place::kind::cpu;
  int cpu_count = 1;                      ///< cpu:N
  bool all_gpus = false;                  ///< gpu:all
  std::vector<gpu_place_item> gpu_items;  ///< gpu:N[,M...] and gpu:NxK, in order
};

/// Parses a place list: the GPU forms when `text` starts with "gpu:", else cpu:N. Throws
/// pe::error (the message starts with "--places") for bad syntax or a device listed twice.
place_list parse_place_list(const std::string& text);

/// Parses the GPU forms only; anything else, cpu:N included, is bad syntax.
place_list parse_gpu_place_list(const std::string& text);

/// The places of `list`, numbered 0, 1, ... A GPU list is checked against the `gpu_count`
/// CUDA devices this process sees: with none, the error says `why_no_gpus` (no CUDA build,
/// no driver, no device); a device beyond the count is named. `text` is the list as
/// written, for the messages. A CPU list ignores the GPU arguments.
std::vector<place> list_places(const place_list& list, const std::string& text, int gpu_count,
                               const std::string& why_no_gpus);

/// The place-list text of `places`, as parse_place_list reads it back: "cpu:2" (also for no
/// places: "cpu:0"), "gpu:0,1", "gpu:0x4", "gpu:0x2,1x2".
std::string place_list_text(const std::vector<place>& places);

/// One place by name, "cpu:N" or "gpu:N" (as to_string writes a place on its own device),
/// the way Python's Place('gpu:1') and places=['cpu:0'] name them; nullopt otherwise.
std::optional<place> parse_place_name(std::string_view name);

/// The CPU places cpu:0 .. cpu:count-1 (none for count <= 0).
std::vector<place> make_cpu_places(int count);

} // namespace pe

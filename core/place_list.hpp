#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/place.hpp"

namespace pe {

/// The one parser of place texts, shared by pe-actor-run's --places (apps/run) and the
/// Python package's place names (python/places.cpp), so both read the same numbers the same
/// way and the syntax and its messages live in one file. Plain text in, places out: asking a
/// runtime how many devices there are is the caller's (devices/device.hpp's
/// device_inventory_of), so this stays in pe_core and a CPU-only list never touches a GPU
/// runtime.
///
/// A place list (--places) names one device kind (core/device_kind.hpp) and its places, in
/// the kind's place form:
///   cpu:N        N >= 1 places of a replicas kind (CPU places share the host);
///   gpu:all      one place per visible device of a devices kind (CUDA_VISIBLE_DEVICES applies);
///   gpu:0,1      one place per listed device;
///   gpu:0x4      four logical places on device 0, each with its own streams (so that
///                multi-place logic runs on one GPU); items combine: gpu:0x2,1x2.
/// A kind a device folder defines is written the same way by its name. Places are numbered
/// 0, 1, ... in that order; a place on numbered devices knows its device. Device numbers and
/// counts are decimals of up to 5 digits.

/// `count` logical places on device `device`: one item of gpu:N[,M...] / gpu:NxK.
struct device_place_item {
  int device = 0;
  int count = 1;
};

/// A place list as written, before any device is asked about.
struct place_list {
  place::kind type = place::kind::cpu;
  int replica_count = 1;                  ///< cpu:N (a replicas kind)
  bool all_devices = false;               ///< gpu:all (a devices kind)
  std::vector<device_place_item> items;   ///< gpu:N[,M...] and gpu:NxK, in order
};

/// What a process has of one kind's numbered devices, to check a place list against.
struct device_inventory {
  int count = 0;         ///< devices this process sees
  std::string problem;   ///< why count is 0: no support in this build, no driver, no device
  std::string numbering; ///< how they are numbered, for messages ("numbered from 0 after ...")
};

/// Parses a place list of any defined kind, by the name before its ':'. Throws pe::error
/// (the message starts with "--places") for bad syntax, an unknown kind (the message is
/// cpu:N's) or a device listed twice.
place_list parse_place_list(const std::string& text);

/// Parses a list of places of `kind` only; anything else is bad syntax for that kind.
place_list parse_place_list_of(place::kind kind, const std::string& text);

/// The GPU forms only (parse_place_list_of(gpu, text)).
place_list parse_gpu_place_list(const std::string& text);

/// The places of `list`, numbered 0, 1, ... A list on numbered devices is checked against
/// `devices`: with none, the error says its problem; a device beyond the count is named.
/// `text` is the list as written, for the messages. A replicas list ignores `devices`.
std::vector<place> list_places(const place_list& list, const std::string& text,
                               const device_inventory& devices);

/// The place-list text of `places`, as parse_place_list reads it back: "cpu:2" (also for no
/// places: "cpu:0"), "gpu:0,1", "gpu:0x4", "gpu:0x2,1x2".
std::string place_list_text(const std::vector<place>& places);

/// One place by name, "KIND:N" of a defined kind ("cpu:1"; a place on numbered devices is
/// on its own device, as to_string writes it), the way Python's Place('gpu:1') and
/// places=['cpu:0'] name them; nullopt otherwise.
std::optional<place> parse_place_name(std::string_view name);

/// The CPU places cpu:0 .. cpu:count-1 (none for count <= 0).
std::vector<place> make_cpu_places(int count);

} // namespace pe

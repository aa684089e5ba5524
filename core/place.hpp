#pragma once

#include <string>

#include "core/device_kind.hpp"

namespace pe {

/// Where a tensor lives and a kernel runs: a place of some device kind (cpu, gpu, or one a
/// device folder defines by name: core/device_kind.hpp), with an index. Several CPU places in
/// one process are data-parallel replicas sharing the host's memory. A place of a kind with
/// numbered devices (a GPU place) also names the hardware device it runs on: usually its own
/// index, but several logical places may share one GPU (gpu:0x4 is places 0..3 on device 0),
/// each with streams of its own.
struct place {
  using kind = device_kind;

  kind type = kind::cpu;
  int index = 0;
  /// The hardware device of a place on numbered devices (for a GPU place the CUDA ordinal, as
  /// the runtime counts them after CUDA_VISIBLE_DEVICES); 0 for CPU places.
  int device = 0;

  static place cpu(int i = 0) { return {kind::cpu, i, 0}; }
  static place gpu(int i) { return {kind::gpu, i, i}; }
  /// Logical place `i` on GPU `device`.
  static place gpu(int i, int device) { return {kind::gpu, i, device}; }

  friend bool operator==(const place&, const place&) = default;
};

/// "cpu:0", "gpu:1"; a logical place on another device's number: "gpu:1@dev0".
std::string to_string(const place& p);

} // namespace pe

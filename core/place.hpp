#pragma once

#include <string>

namespace pe {

/// Where a tensor lives and a kernel runs: a CPU place or a GPU place, each with an index.
/// Several CPU places in one process are data-parallel replicas sharing the host's memory.
/// A GPU place also names the hardware device it runs on: usually its own index, but
/// several logical places may share one GPU (gpu:0x4 is places 0..3 on device 0), each with
/// streams of its own.
struct place {
  enum class kind { cpu, gpu };

  kind type = kind::cpu;
  int index = 0;
  /// The CUDA device ordinal of a GPU place (as the runtime counts them, after
  /// CUDA_VISIBLE_DEVICES); 0 for CPU places.
  int device = 0;

  static place cpu(int i = 0) { return {kind::cpu, i, 0}; }
  static place gpu(int i) { return {kind::gpu, i, i}; }
  /// Logical place `i` on GPU `device`.
  static place gpu(int i, int device) { return {kind::gpu, i, device}; }

  friend bool operator==(const place&, const place&) = default;
};

/// "cpu:0", "gpu:1"; a logical GPU place on another device's ordinal: "gpu:1@dev0".
std::string to_string(const place& p);

} // namespace pe

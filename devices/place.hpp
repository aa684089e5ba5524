#pragma once

#include <string>

namespace pe {

/// Where a tensor lives and a kernel runs: a CPU place or a GPU place, each with an index.
/// Several CPU places in one process are data-parallel replicas sharing the host's memory.
struct place {
  enum class kind { cpu, gpu };

  kind type = kind::cpu;
  int index = 0;

  static place cpu(int i = 0) { return {kind::cpu, i}; }
  static place gpu(int i) { return {kind::gpu, i}; }

  friend bool operator==(const place&, const place&) = default;
};

/// "cpu:0", "gpu:1".
std::string to_string(const place& p);

} // namespace pe

#pragma once

#include <pybind11/pybind11.h>

#include "actors/parallel_executor.hpp"
#include "graph/ssa_graph.hpp"

namespace pe::python {

/// pe_actor.BuildStrategy: Paddle's names for build_strategy's fields. Paddle switches fusion
/// on with fuse_all_reduce_ops and sizes the buckets with a flag; here both are fields.
struct python_build_strategy {
  build_strategy::reduce_mode reduce_strategy = build_strategy{}.reduce;
  build_strategy::gradient_scale gradient_scale_strategy = build_strategy{}.scale;
  bool fuse_all_reduce_ops = false;
  double fuse_all_reduce_mb = 32; ///< bucket size when fuse_all_reduce_ops
  /// The largest tensor a program may declare or infer (pe-actor-run's --max-tensor-bytes).
  std::int64_t max_tensor_bytes = build_strategy{}.max_tensor_bytes;

  /// The engine's strategy; throws pybind11::value_error for a non-positive bucket size or
  /// tensor limit.
  build_strategy engine() const;
};

/// build_strategy=None or a pe_actor.BuildStrategy, as the engine's strategy.
build_strategy to_build_strategy(pybind11::handle strategy);

/// exec_strategy=None or a pe_actor.ExecutionStrategy.
execution_strategy to_execution_strategy(pybind11::handle strategy);

} // namespace pe::python

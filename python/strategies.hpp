#pragma once

#include <optional>
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
  /// Without buckets: an all-reduce per layer (default) or per gradient (--allreduce-groups).
  build_strategy::all_reduce_grouping all_reduce_groups = build_strategy{}.all_reduce_groups;
  /// How sparse gradients are exchanged (pe-actor-run's --sparse-exchange).
  sparse_exchange sparse_exchange_mode = build_strategy{}.sparse_exchange_mode;
  /// The largest tensor a program may declare or infer (pe-actor-run's --max-tensor-bytes).
  std::int64_t max_tensor_bytes = build_strategy{}.max_tensor_bytes;
  /// Batch statistics over every place and process (pe-actor-run's --sync-batch-norm).
  bool sync_batch_norm = false;

  /// The engine's strategy; throws pybind11::value_error for a non-positive bucket size or
  /// tensor limit.
  build_strategy engine() const;
};

/// pe_actor.ExecutionStrategy: execution_strategy's fields as Paddle and pe-actor-run name
/// them, and the stall watch's settings (--stall-timeout, --on-stall) with a Python callable
/// for its reports.
struct python_execution_strategy {
  int num_threads = execution_strategy{}.num_threads;
  sync_mode sync = execution_strategy{}.sync;
  bool check_nan_inf = false;
  bool cuda_graphs = false;
  bool overlap_steps = true;
  std::optional<bool> pin_places; ///< None: place_pinning::when_full; True: always; False: never
  bool actor_per_op = false;
  double stall_timeout = default_stall_timeout_s; ///< seconds; 0: no stall watch
  stall_action on_stall = stall_action::fail;
  /// Called with each stall report's text (a str), on the thread running the step; None:
  /// reports go to sys.stderr.
  pybind11::object on_stall_report = pybind11::none();

  /// The engine's strategy; throws pybind11::value_error for a negative or non-finite stall
  /// timeout or a report sink that is not callable.
  execution_strategy engine() const;
};

/// build_strategy=None or a pe_actor.BuildStrategy, as the engine's strategy.
build_strategy to_build_strategy(pybind11::handle strategy);

/// exec_strategy=None or a pe_actor.ExecutionStrategy.
execution_strategy to_execution_strategy(pybind11::handle strategy);

} // namespace pe::python

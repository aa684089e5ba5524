#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/bound_op.hpp"
#include "actors/scope.hpp"
#include "collectives/cpu_collective.hpp"
#include "graph/ssa_graph.hpp"

namespace pe {

/// What one step needs besides the graph: per-place loss-gradient scales, fetched tensors,
/// the first error, and a cancel flag. Written before the step starts and read after it
/// ends, except where atomic.
struct step_inputs {
  std::vector<float> loss_scale;                 ///< [place]; empty: the user feeds loss@GRAD
  std::vector<std::vector<tensor>> fetched;      ///< [fetch index][place]
  std::atomic<bool> cancelled{false};

  /// Records `message` unless an earlier error was recorded (the first error wins).
  void fail(const std::string& message);
  std::optional<std::string> first_error() const;
  void reset(std::size_t fetches, std::size_t places);

 private:
  mutable std::mutex mutex_;
  std::optional<std::string> error_;
};

/// One op handle, ready to fire: everything but the messaging. Built once per graph.
class step_node {
 public:
  int id = 0;
  op_handle::kind what = op_handle::kind::computation;
  int place = 0;
  std::string label;          ///< "op #3 (mul) on cpu:1", "all_reduce fc_0.w_0@GRAD", ...
  int dependencies = 0;       ///< input edges from other ops: arrivals needed to fire
  std::vector<int> successors; ///< one entry per output edge to a pending op
  std::vector<int> releases;   ///< reference counts this node holds (see step_graph)

  /// Computation and the executor-performed ops: runs on the calling thread. Throws on error.
  void run(step_inputs& in);

  /// Collectives: the task over this step's buffers (pointers are taken now, since kernels
  /// may reallocate outputs between steps). Throws when places disagree on sizes.
  cpu_collective collective();

  bool is_collective() const { return pe::is_collective(what); }

 private:
  friend class step_graph;
  std::optional<bound_op> op_;              // computation
  std::vector<std::vector<tensor*>> slots_; // collectives: [var][place]; others: [0] = {target}
  shape_t shape_;                           // scale_loss_grad: loss@GRAD's shape
  int fetch_index_ = -1;
  int root_ = 0;
};

/// The SSA graph bound to per-place scopes: one step_node per op handle, plus the reference
/// counts that free each temporary when the last op touching it on a place is done, so a
/// step's memory stays near its live set.
class step_graph {
 public:
  step_graph(const proto::ProgramDesc& main, ssa_graph graph, std::vector<scope*> scopes,
             const std::vector<place>& places);

  const ssa_graph& graph() const { return graph_; }
  std::vector<step_node>& nodes() { return nodes_; }
  const std::vector<int>& sources() const { return sources_; }

  /// Sets every reference count to its full value; call before each step.
  void reset_counts();

  /// Drops one reference of each count `node` holds, freeing tensors that reach zero.
  void release(const step_node& node);

 private:
  ssa_graph graph_;
  std::vector<step_node> nodes_;
  std::vector<int> sources_;
  std::vector<tensor*> counted_;             // the tensor each count guards
  std::vector<int> full_counts_;
  std::unique_ptr<std::atomic<int>[]> counts_;
};

} // namespace pe

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sparse_exchange.hpp"
#include "graph/op_registry.hpp"
#include "graph/proto.hpp"
#include "graph/validate.hpp"

namespace pe {

/// How gradients are combined across places (Paddle's BuildStrategy).
struct build_strategy {
  /// all_reduce: every place gets the summed gradient and runs the optimizer.
  /// reduce: each parameter has an owner place (balanced by element count) that receives the
  /// summed gradient, alone runs that parameter's optimizer ops, then broadcasts the parameter.
  enum class reduce_mode { all_reduce, reduce };
  /// coeff_num_device: loss@GRAD on place p = its share of the global batch (1/N for even
  /// splits); one: 1; customized: the user feeds loss@GRAD.
  enum class gradient_scale { coeff_num_device, one, customized };

  /// How dense gradients' all-reduces are grouped when fuse_all_reduce_bytes is 0.
  /// per_layer: one collective for the gradients of consecutive (in the program's order)
  /// parameters whose names share the part before the first '.' (fc_0.w_0 and fc_0.b_0), as
  /// Paddle 2's default fuse_all_reduce_ops groups them (coalesce_grad_tensor_pass by
  /// layer): fewer rendezvous per step, each launched when its layer's last gradient is
  /// written. per_gradient: one collective per gradient (Paddle 1's default).
  enum class all_reduce_grouping { per_layer, per_gradient };

  reduce_mode reduce = reduce_mode::all_reduce;
  gradient_scale scale = gradient_scale::coeff_num_device;
  /// All-reduce gradients in buckets of at most this many bytes (one collective per bucket);
  /// 0 = grouped as all_reduce_groups says. Ignored in reduce mode.
  std::int64_t fuse_all_reduce_bytes = 0;
  all_reduce_grouping all_reduce_groups = all_reduce_grouping::per_layer;
  /// How SELECTED_ROWS gradients' all_gathers exchange the rows (core/sparse_exchange.hpp):
  /// gather them, all-reduce the table densely, or choose per step from the row counts.
  sparse_exchange sparse_exchange_mode = sparse_exchange::automatic;
  /// Paddle's sync_batch_norm: every training-mode batch_norm takes its batch statistics over
  /// every place and process (graph/sync_batch_norm.hpp, applied by the executor before the
  /// graph is built), so N places normalise as one place with the global batch would.
  bool sync_batch_norm = false;
  /// Debug switch for the hazard checker's tests: leave out the WAR/WAW dummy edges.
  bool skip_hazard_edges = false;
  /// Paddle's names: the processes the program is replicated over, each on the same number
  /// of places, and this process's rank (the executor sets both from its process group).
  /// The graph holds this process's places; collectives are inserted whenever the world
  /// (num_trainers x places) has more than one place, and reduce-mode owners are global
  /// ranks spread over every process's places.
  int num_trainers = 1;
  int trainer_id = 0;
  /// The largest tensor the program may declare or infer (see validate_program).
  std::int64_t max_tensor_bytes = default_max_tensor_bytes();
};

/// One version of one variable on one place (or a dummy: a control dependency only).
struct var_handle {
  int id = 0;
  std::string name;   ///< "" for a dummy
  int version = 0;    ///< number of earlier versions of (place, name)
  int place = 0;
  int generated_op = -1;          ///< op writing this version; -1: exists before the step
  std::vector<int> pending_ops;   ///< ops reading it (one entry per input edge)
  bool dummy = false;
};

/// One node of the graph: an op on a place, or a collective across places.
struct op_handle {
  enum class kind {
    computation,     ///< a program op (`op_index` into block 0) on `place`
    scale_loss_grad, ///< writes loss@GRAD on `place` (replaces fill_constant Backward|Loss)
    all_reduce,      ///< sums `vars` across all places, result on every place
    reduce,          ///< sums `vars` into `place` (the owner)
    broadcast,       ///< copies `vars` from `place` (the owner) to every other place
    /// a SELECTED_ROWS gradient's collective: every place gets every place's rows and values,
    /// concatenated in rank order (the optimizers sum repeated rows in that order)
    all_gather,
    fetch,           ///< copies `vars[0]` on `place` out to the caller
  };

  int id = 0;
  kind what = kind::computation;
  int place = 0;         ///< computation/scale/fetch: where it runs; reduce/broadcast: the owner if it is a place of this process, else -1; all_reduce: -1
  int root = 0;          ///< reduce/broadcast: the owner's global rank
  int op_index = -1;     ///< computation: index of the op in block 0
  std::vector<std::string> vars; ///< collectives: variable names (several when fused); fetch: the name
  int fetch_index = -1;  ///< fetch: position in the fetch list
  sparse_exchange exchange = sparse_exchange::automatic; ///< all_gather: build_strategy::sparse_exchange_mode
  std::vector<int> inputs;  ///< var handle ids (one entry per input edge; dummies included)
  std::vector<int> outputs; ///< var handle ids (dummies included)
};

/// Whether ops of this kind are collectives across places (all-reduce, reduce, broadcast).
inline bool is_collective(op_handle::kind k) {
  return k == op_handle::kind::all_reduce || k == op_handle::kind::reduce ||
         k == op_handle::kind::broadcast || k == op_handle::kind::all_gather;
}

/// Paddle's SSA graph: the program replicated on every place, each variable version
/// assigned once, collectives inserted for gradients, dummy vars ordering every read of a
/// version before the write of the next version (WAR) and consecutive writes (WAW).
struct ssa_graph {
  int num_places = 1;
  std::vector<var_handle> vars;
  std::vector<op_handle> ops; ///< in a valid topological order
  /// Reduce mode: the owner of each parameter (by name) as a global rank (= the place
  /// index with one process), in first-use order.
  std::vector<std::pair<std::string, int>> owners;
};

/// The program as an executor runs it under `strategy`: sync_batch_norm lowered into local
/// sums, an all-reduce and the normalisation (graph/sync_batch_norm.hpp), and in reduce mode a
/// sparse table's touched rows broadcast from its owner (graph/touched_rows.hpp).
proto::ProgramDesc lower_for_strategy(const proto::ProgramDesc& program, const build_strategy& strategy);

/// Builds the graph of block 0 of `main` on `num_places` places, with a fetch op per place
/// for each name of `fetch_list`. Programs without op_role_var (inference) get no
/// collectives: each place runs independently. Throws pe::error when the program is not
/// valid, a fetched name or a gradient named in op_role_var is not a variable.
///
/// Op order (topological, and the order every place issues its collectives in): each
/// program op on every place in place order, a gradient's collective right after the op
/// producing it (fused buckets: when full, or before the first optimizer op; an all_gather
/// for a SELECTED_ROWS gradient, in every mode, never fused: in reduce mode its table's owner
/// runs the optimizer op and a c_broadcast op of the program, graph/touched_rows.hpp, sends
/// the touched rows, else the whole table is broadcast with the others), then the
/// broadcasts (reduce mode, in `owners` order), then the fetch ops. The program's own
/// collectives, c_allreduce_sum and c_broadcast, are collectives where they stand. Dummy vars come after
/// all the others: the WAR/WAW hazard edges, then one output for each op without any.
ssa_graph build_ssa_graph(const proto::ProgramDesc& main, int num_places,
                          const build_strategy& strategy,
                          const std::vector<std::string>& fetch_list);

/// The same for a program validated already: `validated` is what validate_program returned
/// for it (executors validate a program once and build a graph per fetch list).
ssa_graph build_ssa_graph(const proto::ProgramDesc& main, const var_table& validated,
                          int num_places, const build_strategy& strategy,
                          const std::vector<std::string>& fetch_list);

/// The op's type ("mul") or, for the engine's own ops, its kind ("all_reduce", "fetch").
std::string op_type_name(const op_handle& op, const proto::ProgramDesc& main);

/// What users read in errors and traces: "op #3 (mul) on cpu:1", "all_reduce(w@GRAD)",
/// "reduce(w@GRAD) to cpu:0", "broadcast(w) from cpu:0", "all_gather(emb@GRAD)",
/// "fetch 'loss' on cpu:1".
std::string describe(const op_handle& op, const proto::ProgramDesc& main,
                     const std::vector<std::string>& place_names);

/// "name@version", or "dummy" for a dummy variable.
std::string version_name(const var_handle& var);

/// Graphviz DOT of the graph: op nodes (boxes, labelled with type and place), var nodes
/// (ellipses, name@version:place; dummies dashed), edges in both directions.
std::string to_dot(const ssa_graph& graph, const proto::ProgramDesc& main);

} // namespace pe

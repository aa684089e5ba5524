#include "graph/ssa_graph.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "graph/attributes.hpp"
#include "graph/op_role.hpp"
#include "graph/sub_blocks.hpp"
#include "graph/sync_batch_norm.hpp"
#include "graph/touched_rows.hpp"
#include "graph/validate.hpp"

namespace pe {

namespace {

using param_grads = std::vector<std::pair<std::string, std::string>>;

bool has_bit(std::int32_t role, std::int32_t bit) { return (role & bit) != 0; }

/// The [param, grad] pairs of an op's op_role_var attribute (empty when absent).
param_grads role_var_pairs(const proto::OpDesc& op, int index) {
  const proto::OpDesc::Attr* a = find_attr(op, "op_role_var");
  if (a == nullptr) return {};
  if (a->strings_size() % 2 != 0)
    throw error("op #" + std::to_string(index) + " (" + op.type() +
                "): op_role_var must list [param, grad] pairs, got " +
                std::to_string(a->strings_size()) + " names");
  param_grads pairs;
  for (int i = 0; i < a->strings_size(); i += 2) pairs.emplace_back(a->strings(i), a->strings(i + 1));
  return pairs;
}

/// What each op of block 0 reads and writes, sub-blocks included.
std::vector<var_accesses> accesses_by_op(const proto::ProgramDesc& main) {
  std::vector<var_accesses> out;
  for (const auto& op : main.blocks(0).ops()) out.push_back(accesses_of(main, 0, op));
  return out;
}

/// The state of one build_ssa_graph call: the graph under construction, the versions of
/// every (place, name), the pending fused all-reduce bucket and the reduce-mode owners.
class graph_builder {
 public:
  graph_builder(const proto::ProgramDesc& main, var_table validated, int num_places,
                const build_strategy& strategy)
      : vars_(std::move(validated)),
        block_(main.blocks(0)),
        accesses_(accesses_by_op(main)),
        strategy_(strategy),
        versions_(num_places),
        load_(static_cast<std::size_t>(num_places * strategy.num_trainers), 0),
        first_rank_(strategy.trainer_id * num_places) {
    graph_.num_places = num_places;
  }

  ssa_graph build(const std::vector<std::string>& fetch_list) {
    for (int i = 0; i < block_.ops_size(); ++i) add_program_op(i);
    flush_bucket();
    for (const auto& [param, owner] : graph_.owners)
      if (!row_broadcasts_.contains(param)) add_broadcast(param, owner);
    for (int k = 0; k < static_cast<int>(fetch_list.size()); ++k) add_fetch(fetch_list[k], k);
    if (!strategy_.skip_hazard_edges) add_hazard_edges();
    add_missing_outputs();
    return std::move(graph_);
  }

 private:
  int num_places() const { return graph_.num_places; }
  bool multi_place() const { return load_.size() > 1; }
  /// The place of this process that global rank `rank` is, or -1.
  int local(int rank) const {
    return rank >= first_rank_ && rank < first_rank_ + num_places() ? rank - first_rank_ : -1;
  }
  bool reduce_mode() const { return strategy_.reduce == build_strategy::reduce_mode::reduce; }

  // --- vars and edges ----------------------------------------------------------------

  /// Appends a var handle; `name` "" makes a dummy.
  int add_var(const std::string& name, int version, int place, int generated_op) {
    int id = static_cast<int>(graph_.vars.size());
    graph_.vars.push_back({.id = id,
                           .name = name,
                           .version = version,
                           .place = place,
                           .generated_op = generated_op,
                           .pending_ops = {},
                           .dummy = name.empty()});
    return id;
  }

  /// Appends an op handle without edges.
  int add_op(op_handle::kind what, int place, std::vector<std::string> vars = {}) {
    op_handle& op = graph_.ops.emplace_back();
    op.id = static_cast<int>(graph_.ops.size()) - 1;
    op.what = what;
    op.place = place;
    op.vars = std::move(vars);
    return op.id;
  }

  /// The newest version of (place, name); version 0 (written before the step) if none.
  int newest(int place, const std::string& name) {
    auto& versions = versions_[place][name];
    if (versions.empty()) versions.push_back(add_var(name, 0, place, -1));
    return versions.back();
  }

  /// One input edge of `op`: the newest version of (place, name).
  void read(int op, int place, const std::string& name) {
    int var = newest(place, name);
    graph_.ops[op].inputs.push_back(var);
    graph_.vars[var].pending_ops.push_back(op);
  }

  /// A new version of (place, name) written by `op`.
  void write(int op, int place, const std::string& name) {
    auto& versions = versions_[place][name];
    int var = add_var(name, static_cast<int>(versions.size()), place, op);
    versions.push_back(var);
    graph_.ops[op].outputs.push_back(var);
  }

  /// A control dependency: `from` must finish before `to` starts.
  void add_dummy_edge(int from, int to, int place) {
    int var = add_var("", 0, place, from);
    graph_.vars[var].pending_ops.push_back(to);
    graph_.ops[from].outputs.push_back(var);
    graph_.ops[to].inputs.push_back(var);
  }

  // --- program ops -------------------------------------------------------------------

  void add_program_op(int index) {
    const proto::OpDesc& op = block_.ops(index);
    // An op that reads a gradient still waiting in the bucket must read its sum: the
    // bucket's collective comes first (a backward op after a layer's gradients, before the
    // next layer's first one flushes the bucket).
    if (reads_bucketed(index)) flush_bucket();
    // The program's own all-reduce (a synchronised batch_norm's statistics): the collective
    // of the graph's gradients, in graph order with them. On a world of one place it stays
    // a computation, whose kernel has nothing to do.
    if (op.type() == "c_allreduce_sum" && multi_place()) {
      add_all_reduce(input_args(op, "X"));
      return;
    }
    // A sparse table's touched rows (graph/touched_rows.hpp), from the table's owner.
    if (op.type() == "c_broadcast" && multi_place()) {
      const proto::OpDesc::Attr* param = find_attr(op, "param");
      const int* owner = param != nullptr ? owner_of(param->s()) : nullptr;
      if (owner == nullptr)
        throw error("op #" + std::to_string(index) + " (c_broadcast): '" + (param ? param->s() : "") +
                    "' has no owner place: a table's rows are broadcast in reduce mode only");
      row_broadcasts_.insert(param->s());
      add_broadcast(input_args(op, "X").at(0), *owner);
      return;
    }
    std::int32_t role = role_of(op);
    auto pairs = role_var_pairs(op, index);
    if (has_bit(role, op_role::optimize)) flush_bucket();
    auto kind = role == (op_role::backward | op_role::loss) ? op_handle::kind::scale_loss_grad
                                                            : op_handle::kind::computation;
    for (int place : places_of(role, pairs)) add_op_on(index, kind, place);
    if (multi_place() && has_bit(role, op_role::backward))
      for (const auto& [param, grad] : pairs) combine_gradient(index, param, grad);
  }

  /// Every place, except for an optimizer op whose parameter has an owner (reduce mode).
  std::vector<int> places_of(std::int32_t role, const param_grads& pairs) const {
    if (has_bit(role, op_role::optimize) && !pairs.empty())
      if (const int* owner = owner_of(pairs.front().first))
        return local(*owner) >= 0 ? std::vector<int>{local(*owner)} : std::vector<int>{};
    std::vector<int> all(num_places());
    for (int p = 0; p < num_places(); ++p) all[p] = p;
    return all;
  }

  void add_op_on(int index, op_handle::kind kind, int place) {
    int op = add_op(kind, place);
    graph_.ops[op].op_index = index;
    // An op running a sub-block stands for all of it: what the block reads and writes.
    const var_accesses& a = accesses_[static_cast<std::size_t>(index)];
    for (const auto& name : a.reads) read(op, place, name);
    for (const auto& name : a.writes) write(op, place, name);
  }

  // --- collectives -------------------------------------------------------------------

  const var_info& info_of(int index, const std::string& name) const {
    auto it = vars_.find(name);
    if (it == vars_.end())
      throw error("op #" + std::to_string(index) + " (" + block_.ops(index).type() +
                  "): op_role_var names '" + name + "', which is not a variable of the program");
    return it->second;
  }

  /// Element count of a gradient or parameter; their dims are always known.
  std::int64_t numel(int index, const std::string& name) const {
    const shape_t& dims = info_of(index, name).dims;
    if (std::any_of(dims.begin(), dims.end(), [](auto d) { return d < 0; }))
      throw error("op #" + std::to_string(index) + " (" + block_.ops(index).type() + "): '" +
                  name + "' has unknown dims " + to_string(dims));
    auto count = checked_product(dims.begin(), dims.end());
    if (!count) fail_overflow(index, "the element count of '" + name + "' " + to_string(dims));
    return *count;
  }

  /// Throws pe::error "op #<index> (<type>): <what> overflows int64".
  [[noreturn]] void fail_overflow(int index, const std::string& what) const {
    throw error("op #" + std::to_string(index) + " (" + block_.ops(index).type() + "): " + what +
                " overflows int64");
  }

  void combine_gradient(int index, const std::string& param, const std::string& grad) {
    const var_info& info = info_of(index, grad);
    if (info.selected_rows) {
      // Every place gets every place's rows, in reduce mode too: the owner updates the table,
      // and the others learn which rows its broadcast will carry.
      add_all_gather(grad);
      if (reduce_mode()) assign_owner(index, param);
    } else if (reduce_mode()) {
      add_reduce(grad, assign_owner(index, param));
    } else if (strategy_.fuse_all_reduce_bytes == 0 &&
               strategy_.all_reduce_groups == build_strategy::all_reduce_grouping::per_gradient) {
      add_all_reduce({grad});
    } else if (strategy_.fuse_all_reduce_bytes == 0) {
      std::string layer = param.substr(0, param.find('.'));
      if (!bucket_.empty() && layer != bucket_layer_) flush_bucket();
      bucket_layer_ = std::move(layer);
      bucket_.push_back(grad);
    } else {
      bucket_.push_back(grad);
      auto bytes = checked_mul(numel(index, grad), static_cast<std::int64_t>(size_of(info.type)));
      auto total = bytes ? checked_add(bucket_bytes_, *bytes) : std::nullopt;
      if (!total)
        fail_overflow(index, "the fused all-reduce bucket's byte count with '" + grad + "'");
      bucket_bytes_ = *total;
      if (bucket_bytes_ >= strategy_.fuse_all_reduce_bytes) flush_bucket();
    }
  }

  bool reads_bucketed(int index) const {
    const var_accesses& a = accesses_[static_cast<std::size_t>(index)];
    return std::any_of(a.reads.begin(), a.reads.end(), [this](const std::string& name) {
      return std::find(bucket_.begin(), bucket_.end(), name) != bucket_.end();
    });
  }

  void flush_bucket() {
    if (bucket_.empty()) return;
    add_all_reduce(std::move(bucket_));
    bucket_.clear();
    bucket_bytes_ = 0;
    bucket_layer_.clear();
  }

  /// Inputs: the newest version of each grad on every place; outputs: a new one likewise.
  void add_all_reduce(std::vector<std::string> grads) {
    int op = add_op(op_handle::kind::all_reduce, -1, std::move(grads));
    for (const auto& grad : graph_.ops[op].vars)
      for (int p = 0; p < num_places(); ++p) read(op, p, grad);
    for (const auto& grad : graph_.ops[op].vars)
      for (int p = 0; p < num_places(); ++p) write(op, p, grad);
  }

  /// A SELECTED_ROWS gradient: read and written on every place, like an all-reduce.
  void add_all_gather(const std::string& grad) {
    int op = add_op(op_handle::kind::all_gather, -1, {grad});
    graph_.ops[op].exchange = strategy_.sparse_exchange_mode;
    for (int p = 0; p < num_places(); ++p) read(op, p, grad);
    for (int p = 0; p < num_places(); ++p) write(op, p, grad);
  }

  void add_reduce(const std::string& grad, int owner) {
    int op = add_op(op_handle::kind::reduce, local(owner), {grad});
    graph_.ops[op].root = owner;
    for (int p = 0; p < num_places(); ++p) read(op, p, grad);
    if (local(owner) >= 0) write(op, local(owner), grad);
  }

  void add_broadcast(const std::string& param, int owner) {
    int op = add_op(op_handle::kind::broadcast, local(owner), {param});
    graph_.ops[op].root = owner;
    if (local(owner) >= 0) read(op, local(owner), param);
    for (int p = 0; p < num_places(); ++p)
      if (p != local(owner)) write(op, p, param);
  }

  const int* owner_of(const std::string& param) const {
    for (const auto& [name, owner] : graph_.owners)
      if (name == param) return &owner;
    return nullptr;
  }

  /// The place with the smallest accumulated element count (ties: the lowest index).
  int assign_owner(int index, const std::string& param) {
    if (const int* owner = owner_of(param)) return *owner;
    int owner = static_cast<int>(std::min_element(load_.begin(), load_.end()) - load_.begin());
    auto load = checked_add(load_[owner], numel(index, param));
    if (!load)
      fail_overflow(index, "the element count owned by place " + std::to_string(owner) + " with '" +
                               param + "'");
    load_[owner] = *load;
    graph_.owners.emplace_back(param, owner);
    return owner;
  }

  // --- fetch, hazards ----------------------------------------------------------------

  void add_fetch(const std::string& name, int k) {
    auto var = vars_.find(name);
    if (var == vars_.end())
      throw error("fetch '" + name + "' is not a variable of the program");
    if (var->second.selected_rows)
      throw error("fetch '" + name + "' is a SELECTED_ROWS variable (a sparse gradient), which "
                  "cannot be fetched; fetch the parameter it updates instead");
    for (int p = 0; p < num_places(); ++p) {
      int op = add_op(op_handle::kind::fetch, p, {name});
      graph_.ops[op].fetch_index = k;
      read(op, p, name);
    }
  }

  /// WAR: every reader of version i runs before the writer of version i+1. WAW: when
  /// version i has no reader at all, its writer runs before the writer of version i+1 (a
  /// writer that reads version i is ordered after its producer already).
  void add_hazard_edges() {
    std::set<std::pair<int, int>> added;
    auto order = [&](int from, int to, int place) {
      if (added.emplace(from, to).second) add_dummy_edge(from, to, place);
    };
    for (int place = 0; place < num_places(); ++place)
      for (const auto& [name, versions] : versions_[place])
        for (std::size_t i = 0; i + 1 < versions.size(); ++i) {
          // Copies: add_dummy_edge grows graph_.vars.
          const std::vector<int> readers = graph_.vars[versions[i]].pending_ops;
          const int producer = graph_.vars[versions[i]].generated_op;
          const int writer = graph_.vars[versions[i + 1]].generated_op;
          for (int reader : readers)
            if (reader != writer) order(reader, writer, place);
          if (readers.empty() && producer >= 0 && producer != writer)
            order(producer, writer, place);
        }
  }

  /// Ops without outputs (fetch) get a dummy one, so every op signals its completion.
  void add_missing_outputs() {
    for (auto& op : graph_.ops)
      if (op.outputs.empty()) op.outputs.push_back(add_var("", 0, op.place, op.id));
  }

  var_table vars_; ///< first: validation runs before block 0 is looked at
  const proto::BlockDesc& block_;
  std::vector<var_accesses> accesses_; ///< by op of block 0
  const build_strategy& strategy_;
  ssa_graph graph_;
  /// Per place: name -> var handle ids of its versions, oldest first.
  std::vector<std::map<std::string, std::vector<int>>> versions_;
  std::vector<std::string> bucket_;
  std::int64_t bucket_bytes_ = 0;
  std::string bucket_layer_; // per_layer grouping: the layer of the gradients in bucket_
  std::vector<std::int64_t> load_; ///< reduce mode: elements owned per global rank
  std::set<std::string> row_broadcasts_; ///< tables whose touched rows are broadcast (c_broadcast)
  int first_rank_;                 ///< the global rank of this process's place 0
};

// --- DOT ---------------------------------------------------------------------------

/// `text` as a DOT string literal; "\n" in `text` stays a DOT line break.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

const char* kind_name(op_handle::kind kind) {
  switch (kind) {
    case op_handle::kind::computation: return "computation";
    case op_handle::kind::scale_loss_grad: return "scale_loss_grad";
    case op_handle::kind::all_reduce: return "all_reduce";
    case op_handle::kind::reduce: return "reduce";
    case op_handle::kind::broadcast: return "broadcast";
    case op_handle::kind::all_gather: return "all_gather";
    case op_handle::kind::fetch: return "fetch";
  }
  return "?";
}

std::string op_label(const op_handle& op, const proto::ProgramDesc& main) {
  std::string label = op_type_name(op, main);
  for (const auto& v : op.vars) label += " " + v;
  if (op.place >= 0) label += "\\n" + std::to_string(op.place);
  return label;
}

std::string var_label(const var_handle& var) {
  return version_name(var) + ":" + std::to_string(var.place);
}

} // namespace

std::string op_type_name(const op_handle& op, const proto::ProgramDesc& main) {
  return op.what == op_handle::kind::computation ? main.blocks(0).ops(op.op_index).type()
                                                 : kind_name(op.what);
}

std::string version_name(const var_handle& var) {
  return var.dummy ? std::string("dummy") : var.name + "@" + std::to_string(var.version);
}

std::string describe(const op_handle& op, const proto::ProgramDesc& main,
                     const std::vector<std::string>& place_names) {
  auto on = [&](int p) { return " on " + place_names.at(static_cast<std::size_t>(p)); };
  std::string vars;
  for (const auto& v : op.vars) vars += (vars.empty() ? "" : ", ") + v;
  switch (op.what) {
    case op_handle::kind::computation:
      return "op #" + std::to_string(op.op_index) + " (" + op_type_name(op, main) + ")" + on(op.place);
    case op_handle::kind::scale_loss_grad: return "scale_loss_grad" + on(op.place);
    case op_handle::kind::all_reduce: return "all_reduce(" + vars + ")";
    case op_handle::kind::reduce:
      return "reduce(" + vars + ") to" + (op.place >= 0 ? on(op.place).substr(3) : " rank " + std::to_string(op.root));
    case op_handle::kind::broadcast:
      return "broadcast(" + vars + ") from" + (op.place >= 0 ? on(op.place).substr(3) : " rank " + std::to_string(op.root));
    case op_handle::kind::all_gather: return "all_gather(" + vars + ")";
    case op_handle::kind::fetch: return "fetch '" + vars + "'" + on(op.place);
  }
  return "?";
}

ssa_graph build_ssa_graph(const proto::ProgramDesc& main, int num_places,
                          const build_strategy& strategy,
                          const std::vector<std::string>& fetch_list) {
  return build_ssa_graph(main, validate_program(main, strategy.max_tensor_bytes), num_places,
                         strategy, fetch_list);
}

ssa_graph build_ssa_graph(const proto::ProgramDesc& main, const var_table& validated,
                          int num_places, const build_strategy& strategy,
                          const std::vector<std::string>& fetch_list) {
  if (num_places < 1)
    throw error("build_ssa_graph: need at least one place, got " + std::to_string(num_places));
  if (strategy.num_trainers < 1 || strategy.trainer_id < 0 || strategy.trainer_id >= strategy.num_trainers)
    throw error("build_ssa_graph: trainer_id " + std::to_string(strategy.trainer_id) +
                " outside num_trainers " + std::to_string(strategy.num_trainers));
  return graph_builder(main, validated, num_places, strategy).build(fetch_list);
}

proto::ProgramDesc lower_for_strategy(const proto::ProgramDesc& program, const build_strategy& strategy) {
  proto::ProgramDesc lowered = lower_sync_batch_norm(program, strategy.sync_batch_norm);
  if (strategy.reduce == build_strategy::reduce_mode::reduce) lowered = broadcast_touched_rows(lowered);
  return lowered;
}

std::string to_dot(const ssa_graph& graph, const proto::ProgramDesc& main) {
  std::ostringstream dot;
  dot << "digraph ssa_graph {\n";
  for (const auto& op : graph.ops)
    dot << "  op" << op.id << " [shape=box, label=" << quoted(op_label(op, main)) << "];\n";
  for (const auto& var : graph.vars) {
    dot << "  var" << var.id << " [shape=ellipse, label=" << quoted(var_label(var))
        << (var.dummy ? ", style=dashed];\n" : "];\n");
  }
  for (const auto& op : graph.ops) {
    for (int in : op.inputs) dot << "  var" << in << " -> op" << op.id << ";\n";
    for (int out : op.outputs) dot << "  op" << op.id << " -> var" << out << ";\n";
  }
  dot << "}\n";
  return dot.str();
}

} // namespace pe

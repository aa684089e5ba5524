#include "graph/backward.hpp"

#include <map>
#include <set>

#include "core/error.hpp"
#include "graph/attributes.hpp"
#include "graph/op_registry.hpp"
#include "graph/op_role.hpp"
#include "graph/validate.hpp"

namespace pe {

namespace {

constexpr std::string_view grad_suffix = "@GRAD";

bool is_grad_slot(const std::string& slot) {
  return slot.size() > grad_suffix.size() && slot.ends_with(grad_suffix);
}

/// "x@GRAD" -> "x".
std::string forward_name(const std::string& grad) {
  return grad.substr(0, grad.size() - grad_suffix.size());
}

/// One place where a grad op writes the gradient of a variable.
struct contribution {
  int op;           // index in the block
  std::string slot; // output slot of that op
  int position;     // argument position within the slot
};

/// The state of one append_backward call.
class backward_pass {
 public:
  backward_pass(proto::BlockDesc& block, const std::string& loss)
      : block_(block), vars_(tensor_vars(block)) {
    if (!vars_.contains(loss))
      throw error("append_backward: loss '" + loss + "' is not a variable of the program");
    for (const auto& v : block.vars())
      if (v.is_parameter() && !v.stop_gradient()) parameters_.push_back(v.name());
      else if (v.stop_gradient()) stopped_.insert(v.name());
  }

  std::vector<std::pair<std::string, std::string>> run(const std::string& loss) {
    int loss_op = producer_of(loss);
    mark_differentiable(loss_op);
    seed_loss_gradient(loss);
    for (int i = loss_op; i >= 0; --i) {
      proto::OpDesc forward = block_.ops(i); // a copy: the block grows below
      if (role_of(forward) != op_role::forward) continue;
      const op_schema* schema = op_registry::global().find(forward.type());
      if (schema == nullptr || !schema->make_grad || !reads_differentiable(forward)) continue;
      for (auto& grad_op : schema->make_grad(forward)) emit(grad_op, i, forward.type());
    }
    for (const auto& [var, _] : contributions_) sum_contributions(var);
    return parameter_gradients();
  }

 private:
  int producer_of(const std::string& name) const {
    for (int i = block_.ops_size() - 1; i >= 0; --i)
      for (const auto& slot : block_.ops(i).outputs())
        for (const auto& arg : slot.arguments())
          if (arg == name) return i;
    throw error("append_backward: no op computes the loss '" + name + "'");
  }

  bool reads_differentiable(const proto::OpDesc& op) const {
    for (const auto& slot : op.inputs())
      for (const auto& arg : slot.arguments())
        if (differentiable_.contains(arg)) return true;
    return false;
  }

  /// Variables whose gradient is wanted: trainable parameters and every FP32 output of a
  /// differentiable forward op that reads one of them.
  void mark_differentiable(int last_op) {
    differentiable_.insert(parameters_.begin(), parameters_.end());
    for (int i = 0; i <= last_op; ++i) {
      const proto::OpDesc& op = block_.ops(i);
      const op_schema* schema = op_registry::global().find(op.type());
      if (schema == nullptr || !schema->make_grad || !reads_differentiable(op)) continue;
      for (const auto& slot : op.outputs())
        for (const auto& arg : slot.arguments())
          if (!stopped_.contains(arg) && vars_.contains(arg) &&
              vars_.at(arg).type == dtype::fp32)
            differentiable_.insert(arg);
    }
  }

  /// Declares `name`, the gradient of `of`, with of's dtype and dims: a tensor, or
  /// SELECTED_ROWS (rows of of's table: a sparse lookup's W@GRAD).
  void declare_grad(const std::string& name, const std::string& of, bool selected_rows = false) {
    for (const auto& v : block_.vars())
      if (v.name() == name) return;
    proto::VarDesc& v = *block_.add_vars();
    v.set_name(name);
    v.mutable_type()->set_type(selected_rows ? proto::VarType::SELECTED_ROWS : proto::VarType::LOD_TENSOR);
    auto* desc = selected_rows ? v.mutable_type()->mutable_selected_rows()
                               : v.mutable_type()->mutable_lod_tensor()->mutable_tensor();
    const var_info& info = vars_.at(of);
    desc->set_data_type(static_cast<proto::VarType::Type>(info.type));
    for (auto d : info.dims) desc->add_dims(d);
  }

  void seed_loss_gradient(const std::string& loss) {
    std::string g = grad_name(loss);
    declare_grad(g, loss);
    const shape_t& dims = vars_.at(loss).dims;
    proto::OpDesc& op = *block_.add_ops();
    op.set_type("fill_constant");
    set_output(op, "Out", {g});
    set_attr(op, "shape", std::vector<std::int64_t>(dims.begin(), dims.end()));
    set_attr(op, "value", 1.0f);
    set_attr(op, "dtype", std::int32_t{5});
    set_attr(op, "op_role", op_role::backward | op_role::loss);
    has_grad_.insert(loss);
    producer_[loss] = block_.ops_size() - 1;
  }

  void emit(proto::OpDesc grad_op, int forward_index, const std::string& forward_type) {
    // The gradients this op reads must all exist; skip it when none does (its outputs do
    // not reach the loss).
    std::vector<std::string> needed, missing;
    for (const auto& slot : grad_op.inputs())
      if (is_grad_slot(slot.parameter()))
        for (const auto& arg : slot.arguments())
          (has_grad_.contains(forward_name(arg)) ? needed : missing).push_back(forward_name(arg));
    if (needed.empty()) return;
    if (!missing.empty())
      throw error("append_backward: op #" + std::to_string(forward_index) + " (" + forward_type +
                  ") needs the gradient of '" + missing.front() +
                  "', but no path from it reaches the loss");
    for (const auto& v : needed) sum_contributions(v);

    // Keep only the gradients wanted.
    auto& outputs = *grad_op.mutable_outputs();
    for (auto& slot : outputs) {
      if (!is_grad_slot(slot.parameter())) continue;
      std::vector<std::string> kept;
      for (const auto& arg : slot.arguments())
        if (differentiable_.contains(forward_name(arg))) kept.push_back(arg);
      slot.clear_arguments();
      for (const auto& arg : kept) slot.add_arguments(arg);
    }
    for (int s = outputs.size() - 1; s >= 0; --s)
      if (outputs.Get(s).arguments_size() == 0) outputs.DeleteSubrange(s, 1);
    if (outputs.empty()) return;

    set_attr(grad_op, "op_role", op_role::backward);
    int index = block_.ops_size();
    *block_.add_ops() = std::move(grad_op);
    const proto::OpDesc& added = block_.ops(index);
    // is_sparse (lookup_table_v2) makes the outputs that may be SELECTED_ROWS so.
    const op_schema* schema = op_registry::global().find(added.type());
    const auto* sparse = find_attr(added, "is_sparse");
    for (const auto& slot : added.outputs())
      for (int p = 0; p < slot.arguments_size(); ++p) {
        std::string var = forward_name(slot.arguments(p));
        const slot_spec* spec = schema == nullptr ? nullptr : schema->find_output(slot.parameter());
        declare_grad(slot.arguments(p), var, sparse != nullptr && sparse->b() && spec != nullptr && spec->selected_rows);
        contributions_[var].push_back({index, slot.parameter(), p});
        has_grad_.insert(var);
        producer_[var] = index;
      }
  }

  /// When several grad ops wrote var@GRAD, renames their outputs var@GRAD@RENAME@k and
  /// appends sum(renamed...) -> var@GRAD. Called before the first reader and at the end.
  void sum_contributions(const std::string& var) {
    auto it = contributions_.find(var);
    if (it == contributions_.end() || it->second.size() < 2 || summed_.contains(var)) return;
    summed_.insert(var);
    std::string g = grad_name(var);
    std::vector<std::string> renamed;
    for (const auto& c : it->second) {
      std::string name = g + "@RENAME@" + std::to_string(renamed.size());
      for (auto& slot : *block_.mutable_ops(c.op)->mutable_outputs())
        if (slot.parameter() == c.slot) slot.set_arguments(c.position, name);
      declare_grad(name, var);
      renamed.push_back(name);
    }
    proto::OpDesc& sum = *block_.add_ops();
    sum.set_type("sum");
    set_input(sum, "X", renamed);
    set_output(sum, "Out", {g});
    set_attr(sum, "op_role", op_role::backward);
    producer_[var] = block_.ops_size() - 1;
  }

  /// Marks each parameter's gradient producer with op_role_var and lists the pairs in the
  /// parameters' declaration order.
  std::vector<std::pair<std::string, std::string>> parameter_gradients() {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& p : parameters_) {
      if (!has_grad_.contains(p)) continue;
      pairs.emplace_back(p, grad_name(p));
      proto::OpDesc& producer = *block_.mutable_ops(producer_.at(p));
      std::vector<std::string> role_var;
      if (const auto* a = find_attr(producer, "op_role_var"))
        role_var.assign(a->strings().begin(), a->strings().end());
      role_var.push_back(p);
      role_var.push_back(grad_name(p));
      set_attr(producer, "op_role_var", role_var);
    }
    return pairs;
  }

  proto::BlockDesc& block_;
  var_table vars_;
  std::vector<std::string> parameters_;
  std::set<std::string> stopped_;
  std::set<std::string> differentiable_;
  std::set<std::string> has_grad_;
  std::set<std::string> summed_;
  std::map<std::string, std::vector<contribution>> contributions_;
  std::map<std::string, int> producer_; // var -> op writing the final var@GRAD
};

} // namespace

std::vector<std::pair<std::string, std::string>> append_backward(proto::ProgramDesc& main,
                                                                 const std::string& loss) {
  if (main.blocks_size() == 0) throw error("append_backward: the program has no blocks");
  return backward_pass(*main.mutable_blocks(0), loss).run(loss);
}

} // namespace pe

#include "graph/sync_batch_norm.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "graph/attributes.hpp"

namespace pe {

namespace {

/// Training mode: the op normalises with (and its grad differentiates) the batch's statistics.
bool training(const proto::OpDesc& op) {
  for (const char* name : {"is_test", "use_global_stats"})
    if (const proto::OpDesc::Attr* a = find_attr(op, name); a != nullptr && a->b()) return false;
  return true;
}

/// The one variable bound to `slot`, or "" when the slot is absent or empty.
std::string only_arg(const proto::OpDesc& op, std::string_view slot, bool output) {
  const auto args = output ? output_args(op, slot) : input_args(op, slot);
  return args.empty() ? std::string() : args.front();
}

/// Rewrites one block; `out` starts as a copy of the program with block 0's ops cleared.
class lowering {
 public:
  lowering(const proto::BlockDesc& source, proto::BlockDesc& target, bool convert)
      : source_(source), target_(target), convert_(convert) {}

  void run() {
    for (int i = 0; i < source_.ops_size(); ++i) {
      const proto::OpDesc& op = source_.ops(i);
      const bool sync = op.type().starts_with("sync_batch_norm") ||
                        (convert_ && op.type().starts_with("batch_norm"));
      if (sync && op.type().ends_with("batch_norm") && training(op)) {
        lower_forward(i, op);
      } else if (sync && op.type().ends_with("batch_norm_grad") && training(op)) {
        lower_grad(i, op);
      } else if (op.type() == "sync_batch_norm" || op.type() == "sync_batch_norm_grad") {
        // Inference mode: the running statistics, the same on every place; nothing to share.
        proto::OpDesc& plain = *target_.add_ops() = op;
        plain.set_type(op.type().substr(5));
      } else {
        *target_.add_ops() = op;
      }
    }
  }

 private:
  /// A copy of `op`'s attributes (op_role_var only when `role_var`) on a new op of `type`.
  proto::OpDesc& add_op(const proto::OpDesc& from, const std::string& type, bool role_var) {
    proto::OpDesc& op = *target_.add_ops();
    op.set_type(type);
    for (const auto& a : from.attrs())
      if (role_var || a.name() != "op_role_var") *op.add_attrs() = a;
    return op;
  }

  /// Copies `from`'s `slot` to `to` when bound.
  static void pass_input(proto::OpDesc& to, const proto::OpDesc& from, const std::string& slot) {
    const auto args = input_args(from, slot);
    if (!args.empty()) set_input(to, slot, args);
  }
  static void pass_output(proto::OpDesc& to, const proto::OpDesc& from, const std::string& slot) {
    const auto args = output_args(from, slot);
    if (!args.empty()) set_output(to, slot, args);
  }

  /// Declares the statistics variable "<base>@SYNC_BN_STATS" ([2C + 1], FP32), made unique.
  std::string declare_stats(int index, const proto::OpDesc& op, const std::string& base) {
    const std::string scale = only_arg(op, "Scale", false);
    const proto::VarDesc* s = declared_var(source_, scale);
    if (s == nullptr || !s->type().has_lod_tensor() ||
        s->type().lod_tensor().tensor().dims_size() != 1 || s->type().lod_tensor().tensor().dims(0) < 1)
      throw error("op #" + std::to_string(index) + " (" + op.type() + "): Scale '" + scale +
                  "' must be a declared variable of known dims [C] to share batch statistics across places");
    const std::int64_t c = s->type().lod_tensor().tensor().dims(0);
    std::string name = base + "@SYNC_BN_STATS";
    for (int k = 1; declared_var(target_, name) != nullptr; ++k)
      name = base + "@SYNC_BN_STATS_" + std::to_string(k);
    proto::VarDesc& v = *target_.add_vars();
    v.set_name(name);
    v.mutable_type()->set_type(proto::VarType::LOD_TENSOR);
    auto* desc = v.mutable_type()->mutable_lod_tensor()->mutable_tensor();
    desc->set_data_type(static_cast<proto::VarType::Type>(dtype::fp32));
    desc->add_dims(2 * c + 1);
    v.set_stop_gradient(true);
    return name;
  }

  void add_all_reduce(const proto::OpDesc& from, const std::string& stats) {
    proto::OpDesc& op = add_op(from, "c_allreduce_sum", false);
    set_input(op, "X", {stats});
    set_output(op, "Out", {stats});
  }

  void lower_forward(int index, const proto::OpDesc& op) {
    const std::string stats = declare_stats(index, op, only_arg(op, "Y", true));
    proto::OpDesc& local = add_op(op, "sync_batch_norm_stats", false);
    pass_input(local, op, "X");
    pass_input(local, op, "Mean");
    set_output(local, "Stats", {stats});
    add_all_reduce(op, stats);
    proto::OpDesc& apply = add_op(op, "sync_batch_norm_apply", false);
    for (const char* slot : {"X", "Scale", "Bias", "Mean", "Variance", "MomentumTensor"})
      pass_input(apply, op, slot);
    set_input(apply, "Stats", {stats});
    for (const char* slot : {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"})
      pass_output(apply, op, slot);
  }

  void lower_grad(int index, const proto::OpDesc& op) {
    const std::string stats = declare_stats(index, op, only_arg(op, "Y@GRAD", false));
    proto::OpDesc& local = add_op(op, "sync_batch_norm_grad_stats", true);
    for (const char* slot : {"X", "Y@GRAD", "SavedMean", "SavedVariance"}) pass_input(local, op, slot);
    for (const char* slot : {"Scale@GRAD", "Bias@GRAD"}) pass_output(local, op, slot);
    set_output(local, "Stats", {stats});
    if (only_arg(op, "X@GRAD", true).empty()) return; // nobody needs X's gradient
    add_all_reduce(op, stats);
    proto::OpDesc& apply = add_op(op, "sync_batch_norm_grad_apply", false);
    for (const char* slot : {"X", "Scale", "SavedMean", "SavedVariance", "Y@GRAD"}) pass_input(apply, op, slot);
    set_input(apply, "Stats", {stats});
    pass_output(apply, op, "X@GRAD");
  }

  const proto::BlockDesc& source_;
  proto::BlockDesc& target_;
  bool convert_;
};

} // namespace

bool has_op_type(const proto::ProgramDesc& program, const char* type) {
  if (program.blocks_size() == 0) return false;
  for (const auto& op : program.blocks(0).ops())
    if (op.type() == type) return true;
  return false;
}

proto::ProgramDesc lower_sync_batch_norm(const proto::ProgramDesc& program, bool convert_batch_norm) {
  if (program.blocks_size() == 0 ||
      (!convert_batch_norm && !has_op_type(program, "sync_batch_norm") &&
       !has_op_type(program, "sync_batch_norm_grad")))
    return program;
  proto::ProgramDesc out = program;
  proto::BlockDesc& block = *out.mutable_blocks(0);
  block.clear_ops();
  lowering(program.blocks(0), block, convert_batch_norm).run();
  return out;
}

} // namespace pe

#include "graph/touched_rows.hpp"

#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "graph/attributes.hpp"

namespace pe {

namespace {

/// Whether `op` is an optimizer op that changes only the rows of a SELECTED_ROWS Grad.
bool updates_touched_rows_only(const proto::BlockDesc& block, const proto::OpDesc& op) {
  const auto grad = input_args(op, "Grad");
  if (grad.size() != 1 || input_args(op, "Param").size() != 1) return false;
  const proto::VarDesc* g = declared_var(block, grad.front());
  if (g == nullptr || g->type().type() != proto::VarType::SELECTED_ROWS) return false;
  if (op.type() == "sgd") return true;
  if (op.type() == "adam") {
    const proto::OpDesc::Attr* lazy = find_attr(op, "lazy_mode");
    return lazy != nullptr && lazy->b();
  }
  return false;
}

/// The op's attributes worth keeping on the ops added after it: its role, not op_role_var
/// (which would make the SSA graph run them on the owner only).
void copy_role(const proto::OpDesc& from, proto::OpDesc& to) {
  for (const auto& a : from.attrs())
    if (a.name() == "op_role") *to.add_attrs() = a;
}

} // namespace

proto::ProgramDesc broadcast_touched_rows(const proto::ProgramDesc& program) {
  if (program.blocks_size() == 0) return program;
  const proto::BlockDesc& source = program.blocks(0);
  bool any = false;
  for (const auto& op : source.ops()) any = any || updates_touched_rows_only(source, op);
  if (!any) return program;

  proto::ProgramDesc out = program;
  proto::BlockDesc& block = *out.mutable_blocks(0);
  block.clear_ops();
  for (const auto& op : source.ops()) {
    *block.add_ops() = op;
    if (!updates_touched_rows_only(source, op)) continue;
    const std::string param = input_args(op, "Param").front();
    const std::string grad = input_args(op, "Grad").front();
    const std::string rows = param + "@TOUCHED_ROWS";
    if (declared_var(block, rows) == nullptr) {
      proto::VarDesc& v = *block.add_vars();
      v.set_name(rows);
      v.mutable_type()->set_type(proto::VarType::LOD_TENSOR);
      auto* desc = v.mutable_type()->mutable_lod_tensor()->mutable_tensor();
      desc->set_data_type(static_cast<proto::VarType::Type>(dtype::fp32));
      desc->add_dims(-1);
      const proto::VarDesc* g = declared_var(source, grad);
      const auto& table = g->type().selected_rows();
      desc->add_dims(table.dims_size() == 2 ? table.dims(1) : -1);
      v.set_stop_gradient(true);
    }
    proto::OpDesc& pack = *block.add_ops();
    pack.set_type("sparse_rows_pack");
    set_input(pack, "Param", {param});
    set_input(pack, "Grad", {grad});
    set_output(pack, "Out", {rows});
    copy_role(op, pack);
    proto::OpDesc& broadcast = *block.add_ops();
    broadcast.set_type("c_broadcast");
    set_input(broadcast, "X", {rows});
    set_output(broadcast, "Out", {rows});
    set_attr(broadcast, "param", param);
    copy_role(op, broadcast);
    proto::OpDesc& scatter = *block.add_ops();
    scatter.set_type("sparse_rows_scatter");
    set_input(scatter, "Param", {param});
    set_input(scatter, "Grad", {grad});
    set_input(scatter, "Rows", {rows});
    set_output(scatter, "ParamOut", {param});
    copy_role(op, scatter);
  }
  return out;
}

} // namespace pe

#include "graph/program_info.hpp"

#include <map>
#include <set>

#include "core/error.hpp"
#include "graph/attributes.hpp"
#include "graph/builder.hpp"
#include "graph/op_registry.hpp"
#include "graph/op_role.hpp"
#include "graph/sub_blocks.hpp"

namespace pe {

std::vector<data_input> data_inputs(const proto::ProgramDesc& program) {
  std::vector<data_input> out;
  if (program.blocks_size() == 0) return out;
  const proto::BlockDesc& block = program.blocks(0);
  std::map<std::string, const proto::VarDesc*, std::less<>> decls;
  for (const auto& v : block.vars()) decls[v.name()] = &v;
  std::set<std::string, std::less<>> written, seen;
  auto note = [&](const std::string& name, int index, const std::string& type) {
    auto d = decls.find(name);
    if (written.contains(name) || seen.contains(name) || d == decls.end()) return;
    if (d->second->persistable() || d->second->type().type() != proto::VarType::LOD_TENSOR) return;
    seen.insert(name);
    out.push_back({name, index, type});
  };
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (op.type() == "feed") {
      for (const auto& name : output_args(op, "Out")) note(name, i, "feed");
      continue;
    }
    if (op.type() == "fetch") continue;
    const var_accesses a = accesses_of(program, 0, op); // a sub-block's reads and writes too
    for (const auto& name : a.reads) note(name, i, op.type());
    for (const auto& name : a.writes) written.insert(name);
  }
  return out;
}

namespace {

/// The first argument bound to `slot` by `args` (input_args or output_args) of the first op
/// of `type` that binds one, or "".
std::string first_arg(const proto::BlockDesc& block, const std::string& type, const std::string& slot,
                      std::vector<std::string> (*args)(const proto::OpDesc&, std::string_view)) {
  for (const auto& op : block.ops())
    if (op.type() == type)
      if (auto bound = args(op, slot); !bound.empty()) return bound.front();
  return "";
}

} // namespace

program_roles analyze_program(const proto::ProgramDesc& main) {
  program_roles roles;
  for (const auto& d : data_inputs(main)) roles.feeds.push_back(d.name);
  if (main.blocks_size() == 0) return roles;
  const proto::BlockDesc& block = main.blocks(0);
  for (const auto& op : block.ops())
    if (role_of(op) == (op_role::backward | op_role::loss))
      if (auto out = output_args(op, "Out"); !out.empty() && out.front().ends_with("@GRAD"))
        roles.loss = out.front().substr(0, out.front().size() - 5);
  roles.softmax = first_arg(block, "softmax_with_cross_entropy", "Softmax", output_args);
  roles.label = first_arg(block, "softmax_with_cross_entropy", "Label", input_args);
  roles.accuracy = first_arg(block, "accuracy", "Accuracy", output_args);
  return roles;
}

proto::ProgramDesc clone_for_test(const proto::ProgramDesc& main, const std::string& label) {
  proto::ProgramDesc test = main;
  if (test.blocks_size() == 0) return test;
  auto& ops = *test.mutable_blocks(0)->mutable_ops();
  for (int i = ops.size() - 1; i >= 0; --i)
    if (role_of(ops.Get(i)) != op_role::forward) ops.DeleteSubrange(i, 1);
  for (proto::OpDesc& op : ops) // batch_norm uses its moving statistics, dropout passes through
    if (const op_schema* schema = op_registry::global().find(op.type()))
      for (const attr_spec& a : schema->attrs)
        if (a.name == "is_test") set_attr(op, "is_test", true);
  program_roles roles = analyze_program(test);
  if (roles.accuracy.empty() && !roles.softmax.empty()) {
    proto::ProgramDesc unused_startup;
    program_builder b(test, unused_startup, 0);
    b.accuracy(roles.softmax, label);
  }
  return test;
}

void assign_seeds(proto::ProgramDesc& startup, std::uint64_t seed) {
  if (startup.blocks_size() == 0) return;
  auto& ops = *startup.mutable_blocks(0)->mutable_ops();
  for (int i = 0; i < ops.size(); ++i) {
    proto::OpDesc& op = *ops.Mutable(i);
    if (op.type() != "uniform_random" && op.type() != "gaussian_random" && op.type() != "dropout")
      continue;
    const proto::OpDesc::Attr* a = find_attr(op, "seed");
    if (a != nullptr && a->i() != 0) continue;
    // A splitmix64 step per op keeps seeds distinct and away from 0 ("random").
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    set_attr(op, "seed", static_cast<std::int32_t>(z % 0x7fffffff) + 1);
  }
}

} // namespace pe

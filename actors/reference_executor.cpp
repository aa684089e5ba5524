#include "actors/reference_executor.hpp"

#include "graph/op_registry.hpp"
#include "graph/program_info.hpp"
#include "graph/validate.hpp"

namespace pe {

reference_executor::reference_executor(const proto::ProgramDesc& program, scope& vars,
                                       place where)
    : vars_(vars), place_(where) {
  var_table declared = validate_program(program);
  for (auto& input : data_inputs(program)) {
    std::string name = input.name;
    data_vars_.emplace(name, data_var{declared.at(name), std::move(input)});
  }
  const proto::BlockDesc& block = program.blocks(0);
  for (int i = 0; i < block.ops_size(); ++i)
    if (!op_registry::global().find(block.ops(i).type())->host_op)
      ops_.emplace_back(block.ops(i), vars_, place_, i);
}

void reference_executor::check_feeds(const feed_map& feeds) const {
  for (const auto& [name, value] : feeds) {
    auto it = data_vars_.find(name);
    if (it == data_vars_.end())
      throw error("feed '" + name + "' is not an input of the program");
    const var_info& want = it->second.info;
    if (!value.initialized()) throw error("feed '" + name + "' is an empty tensor");
    if (value.type() != want.type)
      throw error("feed '" + name + "' has dtype " + to_string(value.type()) +
                  " but the program declares " + to_string(want.type));
    if (!want.dims.empty() && !dims_compatible(value.shape(), want.dims))
      throw error("feed '" + name + "' has shape " + to_string(value.shape()) +
                  " but the program declares " + to_string(want.dims));
  }
  for (const auto& [name, use] : data_vars_)
    if (!feeds.contains(name))
      throw error("missing feed '" + name + "' (read by op #" +
                  std::to_string(use.input.first_reader) + " (" + use.input.reader_type + "))");
}

std::vector<tensor> reference_executor::run(const feed_map& feeds,
                                            const std::vector<std::string>& fetch_list) {
  check_feeds(feeds);
  for (const auto& [name, value] : feeds) vars_.var(name) = value;
  for (auto& op : ops_) op.run();
  std::vector<tensor> results;
  results.reserve(fetch_list.size());
  for (const auto& name : fetch_list) results.push_back(vars_.get(name).clone());
  return results;
}

} // namespace pe

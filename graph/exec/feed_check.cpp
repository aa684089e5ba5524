#include "graph/exec/feed_check.hpp"

#include "graph/sub_blocks.hpp"

namespace pe {

feed_check::feed_check(const proto::ProgramDesc& program, const var_table& declared) {
  for (auto& input : data_inputs(program)) {
    std::string name = input.name;
    data_vars_.emplace(name, data_var{declared.at(name), std::move(input)});
  }
  for (const auto& op : program.blocks(0).ops())
    if (op.type() != "feed")
      for (const auto& name : accesses_of(program, 0, op).writes) // a sub-block's too
        if (data_vars_.contains(name)) written_.insert(name);
}

void feed_check::check(const feed_map& feeds) const {
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

} // namespace pe

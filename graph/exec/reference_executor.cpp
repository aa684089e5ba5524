#include "graph/exec/reference_executor.hpp"

#include "graph/validate.hpp"

namespace pe {

reference_executor::reference_executor(const proto::ProgramDesc& program, scope& vars,
                                       place where, std::int64_t max_tensor_bytes,
                                       bool check_nan_inf)
    : vars_(vars), feeds_(program, validate_program(program, max_tensor_bytes)) {
  const proto::BlockDesc& block = program.blocks(0);
  for (int i = 0; i < block.ops_size(); ++i)
    if (!op_registry::global().find(block.ops(i).type())->host_op)
      ops_.emplace_back(program, 0, i, vars_, where, check_nan_inf);
}

std::vector<tensor> reference_executor::run(const feed_map& feeds,
                                            const std::vector<std::string>& fetch_list) {
  feeds_.check(feeds);
  for (const auto& [name, value] : feeds)
    vars_.var(name) = feeds_.written(name) ? value.clone() : value;
  const std::uint64_t before = steps_++;
  for (auto& op : ops_) {
    op.set_steps_before(before);
    op.run();
  }
  std::vector<tensor> results;
  results.reserve(fetch_list.size());
  for (const auto& name : fetch_list) results.push_back(vars_.get(name).clone());
  return results;
}

} // namespace pe

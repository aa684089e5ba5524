#include "graph/sub_blocks.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "graph/attributes.hpp"

namespace pe {

namespace {

/// Appends `name` to `list` unless `seen` has it.
void note(std::vector<std::string>& list, std::set<std::string, std::less<>>& seen, const std::string& name) {
  if (seen.insert(name).second) list.push_back(name);
}

} // namespace

int sub_block_of(const proto::OpDesc& op) {
  const proto::OpDesc::Attr* a = find_attr(op, "sub_block");
  return a == nullptr || a->type() != proto::BLOCK ? -1 : a->block_idx();
}

int checked_sub_block(const proto::ProgramDesc& program, int block, const proto::OpDesc& op) {
  const proto::OpDesc::Attr* a = find_attr(op, "sub_block");
  if (a == nullptr || a->type() != proto::BLOCK)
    throw error("has no BLOCK attribute 'sub_block' naming the block it runs");
  const int sub = a->block_idx();
  if (sub < 0 || sub >= program.blocks_size())
    throw error("sub_block " + std::to_string(sub) + " is not a block of the program (it has " +
                std::to_string(program.blocks_size()) + ")");
  if (sub == 0 || sub == block)
    throw error("sub_block " + std::to_string(sub) + " is block 0 or the op's own block");
  const int parent = program.blocks(sub).parent_idx();
  if (parent != block)
    throw error("sub_block " + std::to_string(sub) + " has parent block " + std::to_string(parent) +
                ", not the op's block " + std::to_string(block));
  return sub;
}

namespace {

/// accesses_of, with the sub-blocks entered so far: a program whose ops run one block twice
/// (which validation refuses) is refused here too, so that no walk of an unvalidated
/// program revisits a block (each visit could otherwise double the work).
var_accesses accesses_in(const proto::ProgramDesc& program, int block, const proto::OpDesc& op,
                         std::set<int>& entered) {
  var_accesses out;
  std::set<std::string, std::less<>> read, written;
  for (const auto& slot : op.inputs())
    for (const auto& name : slot.arguments()) {
      out.reads.push_back(name);
      read.insert(name);
    }
  for (const auto& slot : op.outputs())
    for (const auto& name : slot.arguments()) {
      out.writes.push_back(name);
      written.insert(name);
    }
  if (sub_block_of(op) < 0) return out;
  const int sub = checked_sub_block(program, block, op);
  if (!entered.insert(sub).second)
    throw error("sub_block " + std::to_string(sub) + " is run by another op too");
  // Only an op of the sub-block itself writes for certain once the block runs; a nested
  // sub-block may not run, so its writes do not hide later reads.
  std::set<std::string, std::less<>> surely_written;
  for (const auto& inner : program.blocks(sub).ops()) {
    const var_accesses a = accesses_in(program, sub, inner, entered);
    for (const auto& name : a.reads)
      if (!surely_written.contains(name)) note(out.reads, read, name);
    for (const auto& name : a.writes) {
      note(out.writes, written, name);
      if (sub_block_of(inner) < 0) surely_written.insert(name);
    }
  }
  return out;
}

} // namespace

var_accesses accesses_of(const proto::ProgramDesc& program, int block, const proto::OpDesc& op) {
  std::set<int> entered;
  return accesses_in(program, block, op, entered);
}

} // namespace pe

#include "graph/validate.hpp"

#include <unistd.h>

#include <limits>
#include <set>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "graph/attributes.hpp"
#include "graph/sub_blocks.hpp"

namespace pe {

std::int64_t default_max_tensor_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGE_SIZE);
  auto total = checked_mul(pages, page_bytes);
  if (pages <= 0 || page_bytes <= 0 || !total) return std::numeric_limits<std::int64_t>::max();
  return *total / 2;
}

bool is_tensor_var(const proto::VarDesc& var) {
  return var.type().type() == proto::VarType::LOD_TENSOR ||
         var.type().type() == proto::VarType::SELECTED_ROWS;
}

var_info declared_info(const proto::VarDesc& var) {
  if (!is_tensor_var(var))
    throw error("variable '" + var.name() + "' has type " +
                proto::VarType::Type_Name(var.type().type()) +
                ", which the engine does not support");
  const bool sparse = var.type().type() == proto::VarType::SELECTED_ROWS;
  const auto& desc = sparse ? var.type().selected_rows() : var.type().lod_tensor().tensor();
  auto type = static_cast<dtype>(desc.data_type());
  if (!is_supported(type))
    throw error("variable '" + var.name() + "' has dtype " +
                proto::VarType::Type_Name(desc.data_type()) +
                ", which is not supported (FP32, INT64, INT32, UINT8, BOOL)");
  shape_t dims(desc.dims().begin(), desc.dims().end());
  // A SELECTED_ROWS variable holds rows of an FP32 [height, width] table (an embedding's
  // gradient): its declaration is the table's.
  if (sparse && (type != dtype::fp32 || dims.size() != 2))
    throw error("variable '" + var.name() + "' is SELECTED_ROWS of " + to_string(type) + " " +
                to_string(dims) + "; only FP32 rows of a [height, width] table are supported");
  return {type, std::move(dims), sparse};
}

var_table tensor_vars(const proto::BlockDesc& block) {
  var_table vars;
  for (const auto& var : block.vars())
    if (is_tensor_var(var)) vars[var.name()] = declared_info(var);
  return vars;
}

namespace {

std::string op_prefix(int index, const proto::OpDesc& op) {
  return "op #" + std::to_string(index) + " (" + op.type() + "): ";
}

void check_slots(const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& bound,
                 const std::vector<slot_spec>& specs, const char* direction,
                 const std::set<std::string, std::less<>>& declared, const var_table& vars,
                 int index, const proto::OpDesc& op) {
  for (const auto& slot : bound) {
    const slot_spec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == slot.parameter()) spec = &s;
    // Newer Paddle versions bind optional slots we do not know (sgd's MasterParam) with no
    // variables: those are harmless; an unknown slot that carries variables is not.
    if (spec == nullptr && slot.arguments_size() == 0) continue;
    if (spec == nullptr)
      throw error(op_prefix(index, op) + "unknown " + direction + " slot '" + slot.parameter() +
                  "'");
    if (!spec->duplicable && slot.arguments_size() > 1)
      throw error(op_prefix(index, op) + direction + " slot '" + slot.parameter() + "' takes one " +
                  "variable but has " + std::to_string(slot.arguments_size()));
    for (const auto& name : slot.arguments()) {
      if (!declared.contains(name))
        throw error(op_prefix(index, op) + direction + " " + slot.parameter() +
                    " uses variable '" + name + "', which is not declared");
      auto var = vars.find(name);
      if (var != vars.end() && var->second.selected_rows && !spec->selected_rows)
        throw error(op_prefix(index, op) + direction + " " + slot.parameter() + " uses variable '" +
                    name + "', which is SELECTED_ROWS: only an optimizer's Grad (sgd, momentum, adam, "
                    "adamw) and a sparse lookup's W@GRAD take one");
    }
  }
  for (const auto& spec : specs) {
    if (spec.dispensable) continue;
    bool present = false;
    for (const auto& slot : bound)
      if (slot.parameter() == spec.name && slot.arguments_size() > 0) present = true;
    if (!present)
      throw error(op_prefix(index, op) + "missing required " + direction + " slot '" + spec.name +
                  "'");
  }
}

/// Why a `type` variable of `dims` cannot exist: a negative dim other than -1, or known dims
/// whose product (an upper bound of every sub-product shape rules compute) or byte size
/// overflows int64 or exceeds `max_bytes`; empty when it can.
std::string size_problem(const std::string& name, const var_info& info, std::int64_t max_bytes) {
  const std::string which = "variable '" + name + "' " + to_string(info.dims);
  for (auto d : info.dims)
    if (d < -1) return which + " has the negative dim " + std::to_string(d) + " (only -1, unknown)";
  shape_t known;
  for (auto d : info.dims)
    if (d > 0) known.push_back(d);
  auto count = checked_product(known.begin(), known.end());
  if (!count) return which + ": the element count overflows int64";
  auto bytes = checked_mul(*count, static_cast<std::int64_t>(size_of(info.type)));
  if (!bytes) return which + ": the byte size of " + to_string(info.type) + " overflows int64";
  if (*bytes > max_bytes)
    return which + " needs " + std::to_string(*bytes) + " bytes of " + to_string(info.type) +
           ", more than the largest tensor allowed, " + std::to_string(max_bytes) +
           " bytes (--max-tensor-bytes)";
  return {};
}

/// Throws size_problem's answer for every variable `op` binds, as the variable table has it.
void check_sizes(const proto::OpDesc& op, int index, const var_table& vars,
                 std::int64_t max_bytes) {
  for (const auto* slots : {&op.inputs(), &op.outputs()})
    for (const auto& slot : *slots)
      for (const auto& name : slot.arguments()) {
        auto it = vars.find(name);
        if (it == vars.end()) continue; // a holder variable
        std::string problem = size_problem(name, it->second, max_bytes);
        if (!problem.empty()) throw error(op_prefix(index, op) + problem);
      }
}

/// The state of one validate_program call: the variables declared so far (block 0's, then
/// each sub-block's as its op is reached) with their dtypes and dims after shape inference.
class program_validator {
 public:
  program_validator(const proto::ProgramDesc& program, std::int64_t max_tensor_bytes)
      : program_(program), max_bytes_(max_tensor_bytes) {}

  var_table run() {
    declare(0);
    check_block(0);
    for (const auto& [name, info] : vars_) { // the variables no op uses
      std::string problem = size_problem(name, info, max_bytes_);
      if (!problem.empty()) throw error(problem);
    }
    return std::move(vars_);
  }

 private:
  /// Adds block `b`'s variables. A sub-block's variable may not reuse a name of the blocks
  /// around it: every place has one scope, so it would be the same variable.
  void declare(int b) {
    const proto::BlockDesc& block = program_.blocks(b);
    for (const auto& var : block.vars()) {
      if (!declared_.insert(var.name()).second)
        throw error("variable '" + var.name() + "' is declared twice" +
                    (b > 0 ? " (block " + std::to_string(b) + " declares a name of a block around it)" : ""));
      auto kind = var.type().type();
      if (kind != proto::VarType::FEED_MINIBATCH && kind != proto::VarType::FETCH_LIST &&
          kind != proto::VarType::STEP_SCOPES)
        declared_info(var); // throws for unsupported kinds and dtypes
      if (var.persistable()) persistable_.insert(var.name());
    }
    vars_.merge(tensor_vars(block));
  }

  void check_block(int b) {
    const proto::BlockDesc& block = program_.blocks(b);
    for (int i = 0; i < block.ops_size(); ++i) check_op(b, i, block.ops(i));
  }

  /// An op of block `b`; an op with a sub-block has that block's ops checked first, in
  /// order, as running it would (their outputs are what the op writes).
  void check_op(int b, int i, const proto::OpDesc& op) {
    const op_schema* schema = op_registry::global().find(op.type());
    if (schema == nullptr)
      throw error("op #" + std::to_string(i) + ": unknown op type '" + op.type() + "'");
    check_slots(op.inputs(), schema->inputs, "input", declared_, vars_, i, op);
    check_slots(op.outputs(), schema->outputs, "output", declared_, vars_, i, op);
    attribute_map attrs;
    try {
      attrs = resolve_attributes(op, *schema);
    } catch (const error& e) {
      throw error(op_prefix(i, op) + e.what());
    }
    check_sizes(op, i, vars_, max_bytes_);
    if (sub_block_of(op) >= 0 || schema->runs_sub_block) check_sub_block(b, i, op);
    if (!schema->infer_shape) return;
    shape_context ctx(op, attrs, vars_, i);
    schema->infer_shape(ctx);
    for (const auto& [name, inferred] : ctx.inferred()) record(i, op, name, inferred);
  }

  void check_sub_block(int b, int i, const proto::OpDesc& op) {
    int sub = 0;
    try {
      sub = checked_sub_block(program_, b, op);
    } catch (const error& e) {
      throw error(op_prefix(i, op) + e.what());
    }
    if (!entered_.insert(sub).second)
      throw error(op_prefix(i, op) + "sub_block " + std::to_string(sub) + " is run by another op too");
    try {
      declare(sub);
      check_block(sub);
    } catch (const error& e) {
      throw error(op_prefix(i, op) + "in sub_block " + std::to_string(sub) + ": " + e.what());
    }
  }

  /// Takes what shape inference says of output `name` of op `i`.
  void record(int i, const proto::OpDesc& op, const std::string& name, const var_info& inferred) {
    auto it = vars_.find(name);
    if (it == vars_.end()) return; // a holder variable
    std::string problem = size_problem(name, inferred, max_bytes_);
    if (!problem.empty()) throw error(op_prefix(i, op) + "inferred " + problem);
    var_info& declared_var = it->second;
    // An intermediate's dtype is its kernel's, as in Paddle, whose VarDescs may declare
    // another (paddle.metric.accuracy's Correct: declared FP32, computed INT32); readers
    // are checked against the computed one. A persistable's declaration is binding.
    if (declared_var.type != inferred.type && !persistable_.contains(name))
      declared_var.type = inferred.type;
    if (declared_var.type != inferred.type)
      throw error(op_prefix(i, op) + "dtype mismatch: output '" + name + "' is computed as " +
                  to_string(inferred.type) + " but declared as " + to_string(declared_var.type));
    if (!declared_var.dims.empty() && !dims_compatible(declared_var.dims, inferred.dims))
      throw error(op_prefix(i, op) + "shape mismatch: output '" + name + "' is inferred as " +
                  to_string(inferred.dims) + " but declared as " + to_string(declared_var.dims));
    // Keep the more specific of the two (a known dim beats -1).
    if (declared_var.dims.empty()) declared_var.dims = inferred.dims;
    for (std::size_t d = 0; d < declared_var.dims.size(); ++d)
      if (declared_var.dims[d] < 0) declared_var.dims[d] = inferred.dims[d];
  }

  const proto::ProgramDesc& program_;
  std::int64_t max_bytes_;
  std::set<std::string, std::less<>> declared_;
  std::set<std::string, std::less<>> persistable_;
  std::set<int> entered_; ///< sub-blocks checked already
  var_table vars_;
};

} // namespace

var_table validate_program(const proto::ProgramDesc& program, std::int64_t max_tensor_bytes) {
  if (program.blocks_size() == 0) throw error("the program has no blocks");
  return program_validator(program, max_tensor_bytes).run();
}

} // namespace pe

// The structure-aware ProgramDesc mutator of the program fuzz targets (libprotobuf-mutator is
// not packaged by Debian, so the targets plug this into LLVMFuzzerCustomMutator).
#include "tests/fuzz/program_mutator.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/op_registry.hpp"

namespace pe::fuzz {

namespace {

using rng_t = std::minstd_rand;
using attr_t = proto::OpDesc::Attr;

std::size_t pick(rng_t& rng, std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }

bool coin(rng_t& rng) { return pick(rng, 2) == 0; }

template <class T, std::size_t N>
const T& pick_of(rng_t& rng, const std::array<T, N>& values) {
  return values[pick(rng, N)];
}

/// Sizes that overflow products, sit on type boundaries or mean "unknown".
std::int64_t interesting_int64(rng_t& rng) {
  static constexpr std::array<std::int64_t, 19> values = {
      0, 1, 2, 3, -1, -2, 7, 255, 65536, std::int64_t{1} << 31, (std::int64_t{1} << 31) - 1,
      std::int64_t{1} << 32, std::int64_t{1} << 40, std::int64_t{1} << 62,
      std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min(),
      std::int64_t{7} << 60, -(std::int64_t{1} << 40), 1000003};
  if (pick(rng, 8) == 0) return static_cast<std::int64_t>(rng()) - 1000;
  return pick_of(rng, values);
}

std::int32_t interesting_int32(rng_t& rng) {
  const std::int64_t v = interesting_int64(rng);
  if (v > std::numeric_limits<std::int32_t>::max() || v < std::numeric_limits<std::int32_t>::min())
    return coin(rng) ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int32_t>::min();
  return static_cast<std::int32_t>(v);
}

double interesting_double(rng_t& rng) {
  static constexpr std::array<double, 14> values = {
      0.0, -0.0, 1.0, -1.0, 0.5, 1e10, -1e10, 1e300, 3e38, 1e-45,
      std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
      std::numeric_limits<double>::quiet_NaN(), 2147483648.0};
  return pick_of(rng, values);
}

std::string interesting_string(rng_t& rng, const proto::ProgramDesc& program) {
  static const std::array<std::string, 12> values = {
      "", "max", "avg", "NCHW", "NHWC", "SAME", "VALID", "EXPLICIT", "1e300", "nan", "-1",
      "upscale_in_train"};
  if (coin(rng) && program.blocks_size() > 0 && program.blocks(0).vars_size() > 0) {
    const auto& block = program.blocks(0);
    return block.vars(static_cast<int>(pick(rng, static_cast<std::size_t>(block.vars_size())))).name();
  }
  return pick_of(rng, values);
}

/// A variable name of block 0 (or a fresh one when there are none).
std::string some_var(rng_t& rng, const proto::BlockDesc& block) {
  if (block.vars_size() == 0 || pick(rng, 10) == 0) return "fuzz_var_" + std::to_string(pick(rng, 4));
  return block.vars(static_cast<int>(pick(rng, static_cast<std::size_t>(block.vars_size())))).name();
}

std::string some_op_type(rng_t& rng) {
  static const std::vector<std::string> types = op_registry::global().types();
  const std::string& type = types[pick(rng, types.size())];
  switch (pick(rng, 8)) {
  case 0: return type + "_grad";
  case 1: return "no_such_op";
  default: return type;
  }
}

proto::VarType::TensorDesc* tensor_desc_of(proto::VarDesc& var) {
  auto* type = var.mutable_type();
  if (type->has_lod_tensor()) return type->mutable_lod_tensor()->mutable_tensor();
  if (type->has_selected_rows()) return type->mutable_selected_rows();
  return nullptr;
}

proto::VarType::Type some_dtype(rng_t& rng) {
  static constexpr std::array<proto::VarType::Type, 10> types = {
      proto::VarType::FP32, proto::VarType::FP32, proto::VarType::INT64, proto::VarType::INT32,
      proto::VarType::BOOL, proto::VarType::UINT8, proto::VarType::FP64, proto::VarType::FP16,
      proto::VarType::INT8, proto::VarType::STRING};
  return pick_of(rng, types);
}

bool mutate_var(proto::BlockDesc& block, rng_t& rng) {
  if (block.vars_size() == 0) return false;
  auto& var = *block.mutable_vars(static_cast<int>(pick(rng, static_cast<std::size_t>(block.vars_size()))));
  auto* desc = tensor_desc_of(var);
  switch (pick(rng, 6)) {
  case 0:
  case 1:
    if (!desc || desc->dims_size() == 0) return false;
    desc->set_dims(static_cast<int>(pick(rng, static_cast<std::size_t>(desc->dims_size()))), interesting_int64(rng));
    return true;
  case 2:
    if (!desc) return false;
    if (coin(rng) || desc->dims_size() == 0) desc->add_dims(interesting_int64(rng));
    else desc->mutable_dims()->RemoveLast();
    return true;
  case 3:
    if (!desc) return false;
    desc->set_data_type(some_dtype(rng));
    return true;
  case 4:
    var.set_persistable(!var.persistable());
    return true;
  default: {
    static constexpr std::array<proto::VarType::Type, 4> kinds = {
        proto::VarType::LOD_TENSOR, proto::VarType::SELECTED_ROWS, proto::VarType::FEED_MINIBATCH,
        proto::VarType::FETCH_LIST};
    var.mutable_type()->set_type(pick_of(rng, kinds));
    return true;
  }
  }
}

void set_interesting_value(attr_t& attr, rng_t& rng, const proto::ProgramDesc& program) {
  switch (attr.type()) {
  case proto::INT: attr.set_i(interesting_int32(rng)); break;
  case proto::LONG: attr.set_l(interesting_int64(rng)); break;
  case proto::FLOAT: attr.set_f(static_cast<float>(interesting_double(rng))); break;
  case proto::FLOAT64: attr.set_float64(interesting_double(rng)); break;
  case proto::STRING: attr.set_s(interesting_string(rng, program)); break;
  case proto::BOOLEAN: attr.set_b(!attr.b()); break;
  case proto::INTS:
    if (attr.ints_size() == 0 || pick(rng, 4) == 0) attr.add_ints(interesting_int32(rng));
    else attr.set_ints(static_cast<int>(pick(rng, static_cast<std::size_t>(attr.ints_size()))), interesting_int32(rng));
    break;
  case proto::LONGS:
    if (attr.longs_size() == 0 || pick(rng, 4) == 0) attr.add_longs(interesting_int64(rng));
    else attr.set_longs(static_cast<int>(pick(rng, static_cast<std::size_t>(attr.longs_size()))), interesting_int64(rng));
    break;
  case proto::FLOATS:
    if (attr.floats_size() == 0 || pick(rng, 4) == 0) attr.add_floats(static_cast<float>(interesting_double(rng)));
    else attr.set_floats(static_cast<int>(pick(rng, static_cast<std::size_t>(attr.floats_size()))),
                         static_cast<float>(interesting_double(rng)));
    break;
  case proto::STRINGS:
    // op_role_var and the like: [param, grad] pairs naming variables.
    if (attr.strings_size() == 0 || pick(rng, 4) == 0) attr.add_strings(interesting_string(rng, program));
    else attr.set_strings(static_cast<int>(pick(rng, static_cast<std::size_t>(attr.strings_size()))),
                          interesting_string(rng, program));
    break;
  case proto::BOOLEANS: attr.add_bools(coin(rng)); break;
  default: attr.set_block_idx(interesting_int32(rng)); break;
  }
}

bool mutate_attr(proto::OpDesc& op, rng_t& rng, const proto::ProgramDesc& program) {
  if (op.attrs_size() == 0 || pick(rng, 6) == 0) {
    // A new attribute: the schema's name with a random type exercises the type checks.
    auto& attr = *op.add_attrs();
    const op_schema* schema = op_registry::global().find(op.type());
    attr.set_name(schema && !schema->attrs.empty() ? schema->attrs[pick(rng, schema->attrs.size())].name
                                                   : std::string("op_role_var"));
    attr.set_type(static_cast<proto::AttrType>(pick(rng, 16)));
    set_interesting_value(attr, rng, program);
    return true;
  }
  auto& attr = *op.mutable_attrs(static_cast<int>(pick(rng, static_cast<std::size_t>(op.attrs_size()))));
  switch (pick(rng, 8)) {
  case 0: attr.set_type(static_cast<proto::AttrType>(pick(rng, 16))); return true;
  case 1:
    op.mutable_attrs()->DeleteSubrange(static_cast<int>(pick(rng, static_cast<std::size_t>(op.attrs_size()))), 1);
    return true;
  default: set_interesting_value(attr, rng, program); return true;
  }
}

bool mutate_slot(proto::OpDesc& op, rng_t& rng, const proto::BlockDesc& block) {
  auto* slots = coin(rng) ? op.mutable_inputs() : op.mutable_outputs();
  if (slots->empty()) {
    auto& slot = *slots->Add();
    slot.set_parameter(coin(rng) ? "X" : "Out");
    slot.add_arguments(some_var(rng, block));
    return true;
  }
  const int index = static_cast<int>(pick(rng, static_cast<std::size_t>(slots->size())));
  auto& slot = *slots->Mutable(index);
  switch (pick(rng, 6)) {
  case 0: slots->DeleteSubrange(index, 1); return true;
  case 1: slot.set_parameter(slot.parameter() + "@GRAD"); return true;
  case 2: slot.add_arguments(some_var(rng, block)); return true;
  case 3:
    if (slot.arguments_size() == 0) return false;
    slot.mutable_arguments()->RemoveLast();
    return true;
  default:
    if (slot.arguments_size() == 0) return false;
    slot.set_arguments(static_cast<int>(pick(rng, static_cast<std::size_t>(slot.arguments_size()))),
                       some_var(rng, block));
    return true;
  }
}

bool mutate_ops(proto::BlockDesc& block, rng_t& rng) {
  if (block.ops_size() == 0) return false;
  const int index = static_cast<int>(pick(rng, static_cast<std::size_t>(block.ops_size())));
  switch (pick(rng, 4)) {
  case 0: block.mutable_ops(index)->set_type(some_op_type(rng)); return true;
  case 1: block.mutable_ops()->DeleteSubrange(index, 1); return true;
  case 2: *block.add_ops() = block.ops(index); return true;
  default: {
    const int other = static_cast<int>(pick(rng, static_cast<std::size_t>(block.ops_size())));
    block.mutable_ops()->SwapElements(index, other);
    return true;
  }
  }
}

} // namespace

bool mutate_program(proto::ProgramDesc& program, std::minstd_rand& rng) {
  if (program.blocks_size() == 0) return false;
  auto& block = *program.mutable_blocks(0);
  switch (pick(rng, 10)) {
  case 0:
  case 1:
  case 2: return mutate_var(block, rng);
  case 3:
  case 4:
  case 5:
    if (block.ops_size() == 0) return false;
    return mutate_attr(*block.mutable_ops(static_cast<int>(pick(rng, static_cast<std::size_t>(block.ops_size())))),
                       rng, program);
  case 6:
  case 7:
    if (block.ops_size() == 0) return false;
    return mutate_slot(*block.mutable_ops(static_cast<int>(pick(rng, static_cast<std::size_t>(block.ops_size())))),
                       rng, block);
  default: return mutate_ops(block, rng);
  }
}

} // namespace pe::fuzz

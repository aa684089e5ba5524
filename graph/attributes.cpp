#include "graph/attributes.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace pe {

namespace {

template <class T, class Repeated>
std::vector<T> to_vector(const Repeated& r) {
  return std::vector<T>(r.begin(), r.end());
}

proto::OpDesc::Var* find_var(google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& vars,
                             std::string_view slot) {
  for (auto& v : vars)
    if (v.parameter() == slot) return &v;
  return nullptr;
}

std::vector<std::string> args_of(const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& vars,
                                 std::string_view slot) {
  for (const auto& v : vars)
    if (v.parameter() == slot) return to_vector<std::string>(v.arguments());
  return {};
}

void bind(google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& vars, const std::string& slot,
          const std::vector<std::string>& args) {
  proto::OpDesc::Var* v = find_var(vars, slot);
  if (v == nullptr) {
    v = vars.Add();
    v->set_parameter(slot);
  }
  v->clear_arguments();
  for (const auto& a : args) v->add_arguments(a);
}

} // namespace

attribute from_proto(const proto::OpDesc::Attr& a) {
  switch (a.type()) {
    case proto::INT: return a.i();
    case proto::FLOAT: return a.f();
    case proto::STRING: return a.s();
    case proto::INTS: return to_vector<std::int32_t>(a.ints());
    case proto::FLOATS: return to_vector<float>(a.floats());
    case proto::STRINGS: return to_vector<std::string>(a.strings());
    case proto::BOOLEAN: return a.b();
    case proto::BOOLEANS: return to_vector<bool>(a.bools());
    case proto::LONG: return static_cast<std::int64_t>(a.l());
    case proto::LONGS: return to_vector<std::int64_t>(a.longs());
    case proto::FLOAT64S: return to_vector<double>(a.float64s());
    case proto::FLOAT64: return a.float64();
    default:
      throw error("attribute '" + a.name() + "' has type " + proto::AttrType_Name(a.type()) +
                  ", which the engine does not support");
  }
}

proto::AttrType attr_type_of(const attribute& a) {
  static constexpr proto::AttrType types[] = {
      proto::INT,      proto::FLOAT,    proto::STRING, proto::INTS,  proto::FLOATS,
      proto::STRINGS,  proto::BOOLEAN,  proto::BOOLEANS, proto::LONG, proto::LONGS,
      proto::FLOAT64S, proto::FLOAT64};
  return types[a.index()];
}

void set_attr(proto::OpDesc& op, const std::string& name, const attribute& value) {
  proto::OpDesc::Attr* a = nullptr;
  for (auto& existing : *op.mutable_attrs())
    if (existing.name() == name) a = &existing;
  if (a == nullptr) a = op.add_attrs();
  a->Clear();
  a->set_name(name);
  a->set_type(attr_type_of(value));
  std::visit(
      [a](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int32_t>) a->set_i(v);
        else if constexpr (std::is_same_v<T, float>) a->set_f(v);
        else if constexpr (std::is_same_v<T, std::string>) a->set_s(v);
        else if constexpr (std::is_same_v<T, std::vector<std::int32_t>>)
          for (auto x : v) a->add_ints(x);
        else if constexpr (std::is_same_v<T, std::vector<float>>)
          for (auto x : v) a->add_floats(x);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>)
          for (const auto& x : v) a->add_strings(x);
        else if constexpr (std::is_same_v<T, bool>) a->set_b(v);
        else if constexpr (std::is_same_v<T, std::vector<bool>>)
          for (bool x : v) a->add_bools(x);
        else if constexpr (std::is_same_v<T, std::int64_t>) a->set_l(v);
        else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>)
          for (auto x : v) a->add_longs(x);
        else if constexpr (std::is_same_v<T, std::vector<double>>)
          for (auto x : v) a->add_float64s(x);
        else if constexpr (std::is_same_v<T, double>) a->set_float64(v);
      },
      value);
}

const proto::VarDesc* declared_var(const proto::BlockDesc& block, std::string_view name) {
  for (const auto& v : block.vars())
    if (v.name() == name) return &v;
  return nullptr;
}

proto::VarDesc* declared_var(proto::BlockDesc& block, std::string_view name) {
  // The const lookup's answer is one of `block`'s own variables, which the caller may change.
  return const_cast<proto::VarDesc*>(declared_var(std::as_const(block), name));
}

const proto::OpDesc::Attr* find_attr(const proto::OpDesc& op, std::string_view name) {
  for (const auto& a : op.attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<std::string> input_args(const proto::OpDesc& op, std::string_view slot) {
  return args_of(op.inputs(), slot);
}

std::vector<std::string> output_args(const proto::OpDesc& op, std::string_view slot) {
  return args_of(op.outputs(), slot);
}

void set_input(proto::OpDesc& op, const std::string& slot, const std::vector<std::string>& args) {
  bind(*op.mutable_inputs(), slot, args);
}

void set_output(proto::OpDesc& op, const std::string& slot, const std::vector<std::string>& args) {
  bind(*op.mutable_outputs(), slot, args);
}

} // namespace pe

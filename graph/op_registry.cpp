#include "graph/op_registry.hpp"

#include <algorithm>
#include <mutex>

#include "core/error.hpp"
#include "graph/attributes.hpp"

namespace pe {

bool dims_compatible(const shape_t& a, const shape_t& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  return true;
}

// --- shape_context ---------------------------------------------------------------------

shape_context::shape_context(const proto::OpDesc& op, const attribute_map& attrs,
                             const var_table& vars, int op_index)
    : op_(op), attrs_(attrs), vars_(vars), op_index_(op_index) {}

std::size_t shape_context::input_count(std::string_view slot) const {
  return input_args(op_, slot).size();
}

std::size_t shape_context::output_count(std::string_view slot) const {
  return output_args(op_, slot).size();
}

const std::string& shape_context::input_name(std::string_view slot, std::size_t i) const {
  for (const auto& v : op_.inputs())
    if (v.parameter() == slot && i < static_cast<std::size_t>(v.arguments_size()))
      return v.arguments(static_cast<int>(i));
  fail("missing input " + std::string(slot) + "[" + std::to_string(i) + "]");
}

const var_info& shape_context::input_var(std::string_view slot, std::size_t i) const {
  const std::string& name = input_name(slot, i);
  auto it = vars_.find(name);
  if (it == vars_.end())
    fail("input " + std::string(slot) + " uses variable '" + name + "', which is not declared");
  return it->second;
}

const shape_t& shape_context::input_dims(std::string_view slot, std::size_t i) const {
  return input_var(slot, i).dims;
}

dtype shape_context::input_dtype(std::string_view slot, std::size_t i) const {
  return input_var(slot, i).type;
}

bool shape_context::output_selected_rows(std::string_view slot, std::size_t i) const {
  auto names = output_args(op_, slot);
  if (i >= names.size()) return false;
  auto it = vars_.find(names[i]);
  return it != vars_.end() && it->second.selected_rows;
}

void shape_context::set_output(std::string_view slot, std::size_t i, shape_t dims, dtype type) {
  auto names = output_args(op_, slot);
  if (i >= names.size()) return;
  inferred_.emplace_back(names[i], var_info{type, std::move(dims)});
}

void shape_context::set_outputs(std::string_view slot, const shape_t& dims, dtype type) {
  auto n = output_count(slot);
  for (std::size_t i = 0; i < n; ++i) set_output(slot, i, dims, type);
}

void shape_context::fail(const std::string& message) const {
  throw error("op #" + std::to_string(op_index_) + " (" + op_.type() + "): " + message);
}

// --- op_schema -------------------------------------------------------------------------

namespace {

template <class Spec>
const Spec* find_by_name(const std::vector<Spec>& specs, std::string_view name) {
  for (const auto& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

} // namespace

const slot_spec* op_schema::find_input(std::string_view slot) const {
  return find_by_name(inputs, slot);
}

const slot_spec* op_schema::find_output(std::string_view slot) const {
  return find_by_name(outputs, slot);
}

const attr_spec* op_schema::find_attr(std::string_view name) const {
  return find_by_name(attrs, name);
}

std::string grad_name(std::string_view name) {
  return std::string(name) + "@GRAD";
}

grad_maker_fn make_default_grad(default_grad spec) {
  return [spec = std::move(spec)](const proto::OpDesc& fwd) {
    proto::OpDesc g;
    g.set_type(fwd.type() + "_grad");
    for (const auto& slot : spec.forward_inputs) {
      auto args = input_args(fwd, slot);
      if (!args.empty()) set_input(g, slot, args);
    }
    for (const auto& slot : spec.forward_outputs) {
      auto args = output_args(fwd, slot);
      if (!args.empty()) set_input(g, slot, args);
    }
    auto grads_of = [](std::vector<std::string> names) {
      for (auto& n : names) n = grad_name(n);
      return names;
    };
    for (const auto& slot : spec.output_grads) {
      auto args = output_args(fwd, slot);
      if (!args.empty()) set_input(g, grad_name(slot), grads_of(args));
    }
    for (const auto& slot : spec.input_grads) {
      auto args = input_args(fwd, slot);
      if (!args.empty()) set_output(g, grad_name(slot), grads_of(args));
    }
    *g.mutable_attrs() = fwd.attrs();
    return std::vector<proto::OpDesc>{g};
  };
}

// --- op_registry -----------------------------------------------------------------------

namespace {

/// What extend() was given, and whether global() has been built (then it is too late).
struct op_extensions {
  std::mutex mutex;
  std::vector<std::function<void(op_registry&)>> adds;
  bool built = false;
};

op_extensions& extensions() {
  static op_extensions e;
  return e;
}

} // namespace

void op_registry::extend(std::function<void(op_registry&)> add) {
  op_extensions& e = extensions();
  std::lock_guard<std::mutex> guard(e.mutex);
  if (e.built) throw error("op_registry::extend: the op registry is in use already; extend it before the first program is read");
  e.adds.push_back(std::move(add));
}

const op_registry& op_registry::global() {
  static const op_registry instance = [] {
    op_registry r;
    register_math_ops(r);
    register_elementwise_ops(r);
    register_activation_ops(r);
    register_shape_ops(r);
    register_loss_ops(r);
    register_dropout_ops(r);
    register_init_ops(r);
    register_optimizer_ops(r);
    register_io_ops(r);
    register_conv_ops(r);
    register_pool_ops(r);
    register_norm_ops(r);
    register_sync_batch_norm_ops(r);
    register_touched_rows_ops(r);
    register_embedding_ops(r);
    register_global_norm_ops(r);
    register_cumsum_ops(r);
    register_slice_ops(r);
    register_condition_ops(r);
    register_control_flow_ops(r);
    op_extensions& e = extensions();
    std::lock_guard<std::mutex> guard(e.mutex);
    for (const auto& add : e.adds) add(r);
    e.built = true;
    return r;
  }();
  return instance;
}

void op_registry::add(op_schema schema) {
  std::string type = schema.type;
  schemas_[type] = std::move(schema);
}

const op_schema* op_registry::find(std::string_view type) const {
  auto it = schemas_.find(type);
  return it == schemas_.end() ? nullptr : &it->second;
}

std::vector<std::string> op_registry::types() const {
  std::vector<std::string> out;
  for (const auto& [type, _] : schemas_) out.push_back(type);
  return out;
}

namespace {

// Paddle 1.x stored some attributes (fill_constant's shape) as INT/INTS that 2.x stores as
// LONG/LONGS: accept the narrower type where the schema wants the wider one.
attribute widen(attribute value, const attribute& wanted) {
  if (std::holds_alternative<std::int64_t>(wanted))
    if (auto* i = std::get_if<std::int32_t>(&value)) return static_cast<std::int64_t>(*i);
  if (std::holds_alternative<std::vector<std::int64_t>>(wanted))
    if (auto* v = std::get_if<std::vector<std::int32_t>>(&value))
      return std::vector<std::int64_t>(v->begin(), v->end());
  return value;
}

} // namespace

attribute_map resolve_attributes(const proto::OpDesc& op, const op_schema& schema) {
  attribute_map out;
  for (const auto& spec : schema.attrs) {
    const proto::OpDesc::Attr* a = find_attr(op, spec.name);
    if (a == nullptr) {
      if (spec.required)
        throw error("missing required attribute '" + spec.name + "'");
      out.set(spec.name, spec.value);
      continue;
    }
    attribute value = widen(from_proto(*a), spec.value);
    if (value.index() != spec.value.index())
      throw error("attribute '" + spec.name + "' has type " +
                  attribute_type_name(value) + ", expected " + attribute_type_name(spec.value));
    out.set(spec.name, std::move(value));
  }
  // Common attributes (op_role, ...) travel along for the graph builder; unknown
  // attributes of supported types are kept too, so a newer Paddle's extras do not break us.
  for (const auto& a : op.attrs())
    if (!out.has(a.name()) && a.type() != proto::BLOCK && a.type() != proto::BLOCKS &&
        a.type() != proto::VAR && a.type() != proto::VARS)
      out.set(a.name(), from_proto(a));
  return out;
}

} // namespace pe

#pragma once

#include <string>
#include <string_view>

#include "core/attribute.hpp"
#include "graph/proto.hpp"

namespace pe {

/// The attribute value stored in a proto attr. Throws pe::error for block and variable
/// attributes, which the engine does not support.
attribute from_proto(const proto::OpDesc::Attr& a);

/// The proto AttrType that holds an attribute value.
proto::AttrType attr_type_of(const attribute& a);

/// Sets (or replaces) attribute `name` of `op`.
void set_attr(proto::OpDesc& op, const std::string& name, const attribute& value);

/// The variable `name` declared in `block`, or nullptr.
const proto::VarDesc* declared_var(const proto::BlockDesc& block, std::string_view name);
/// The same, to change it.
proto::VarDesc* declared_var(proto::BlockDesc& block, std::string_view name);

/// The proto attr `name` of `op`, or nullptr.
const proto::OpDesc::Attr* find_attr(const proto::OpDesc& op, std::string_view name);

/// The arguments bound to an input / output slot of `op` (empty when absent).
std::vector<std::string> input_args(const proto::OpDesc& op, std::string_view slot);
std::vector<std::string> output_args(const proto::OpDesc& op, std::string_view slot);

/// Binds `args` to a slot of `op`, replacing an existing binding.
void set_input(proto::OpDesc& op, const std::string& slot, const std::vector<std::string>& args);
void set_output(proto::OpDesc& op, const std::string& slot, const std::vector<std::string>& args);

} // namespace pe

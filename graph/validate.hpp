#pragma once

#include "graph/op_registry.hpp"
#include "graph/proto.hpp"

namespace pe {

/// Checks block 0 of a program against the op schemas and throws pe::error at the first
/// problem, naming the op (index and type), slot and variable involved:
/// unknown op type, unknown or missing slot, too many variables in a slot, undeclared
/// variable, missing required attribute, attribute of the wrong type, unsupported variable
/// type or dtype, and shape mismatches found by shape inference.
///
/// Returns the variables' dtypes and dims after shape inference.
var_table validate_program(const proto::ProgramDesc& program);

/// The dtype and dims a VarDesc declares; throws pe::error for variable kinds and dtypes the
/// engine does not support.
var_info declared_info(const proto::VarDesc& var);

/// The declared dtype and dims of every tensor variable of a block.
var_table tensor_vars(const proto::BlockDesc& block);

/// Whether a VarDesc is a tensor (rather than a feed/fetch holder).
bool is_tensor_var(const proto::VarDesc& var);

} // namespace pe

#pragma once

#include <cstdint>

#include "graph/op_registry.hpp"
#include "graph/proto.hpp"

namespace pe {

/// The default largest tensor a program may declare or infer: half the machine's physical
/// memory (sysconf), or int64's maximum when the system does not say.
std::int64_t default_max_tensor_bytes();

/// Checks block 0 of a program, and the sub-blocks its ops run (each where its op runs it,
/// see graph/sub_blocks.hpp), against the op schemas and throws pe::error at the first
/// problem, naming the op (index and type), slot and variable involved (an op of a
/// sub-block after the op that runs it):
/// unknown op type, unknown or missing slot, too many variables in a slot, undeclared
/// variable, missing required attribute, attribute of the wrong type, unsupported variable
/// type or dtype, and shape mismatches found by shape inference.
///
/// Also rejects, naming the op and variable, dims with a negative value other than -1 and
/// dims (declared or inferred) whose element count or byte size overflows int64 or whose
/// known dims need more than `max_tensor_bytes` bytes, so that no size computed later from
/// a program overflows.
///
/// Returns the variables' dtypes and dims after shape inference.
var_table validate_program(const proto::ProgramDesc& program,
                           std::int64_t max_tensor_bytes = default_max_tensor_bytes());

/// The dtype and dims a VarDesc declares; throws pe::error for variable kinds and dtypes the
/// engine does not support.
var_info declared_info(const proto::VarDesc& var);

/// The declared dtype and dims of every tensor variable of a block.
var_table tensor_vars(const proto::BlockDesc& block);

/// Whether a VarDesc is a tensor (rather than a feed/fetch holder).
bool is_tensor_var(const proto::VarDesc& var);

} // namespace pe

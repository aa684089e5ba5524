#pragma once

#include <memory>
#include <string>

#include <pybind11/pybind11.h>

#include "graph/proto.hpp"

namespace pe::python {

/// pe_actor.Program holds a ProgramDesc behind a shared pointer (executors copy what they run).
using program_ptr = std::shared_ptr<proto::ProgramDesc>;

/// A program argument as users give it: a pe_actor.Program; bytes (a serialized ProgramDesc,
/// Paddle's program.desc.serialize_to_string(), binary or text); a path (str or
/// os.PathLike); or a Paddle Program (anything with desc.serialize_to_string()). `what` names
/// the argument in errors. Throws pybind11::type_error for anything else, pe::error for bytes
/// or a file that is not a ProgramDesc.
program_ptr to_program(pybind11::handle source, const std::string& what);

} // namespace pe::python

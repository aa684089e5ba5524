#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h> // in every file of the module: its casters must agree

namespace pe::python {

/// Each adds one part of the pe_actor module's API to `m`; module.cpp calls them in order
/// (later parts use the classes the earlier ones registered).
void bind_arrays(pybind11::module_& m);
void bind_places(pybind11::module_& m);
void bind_strategies(pybind11::module_& m);
void bind_programs(pybind11::module_& m);
void bind_models(pybind11::module_& m);
void bind_executor(pybind11::module_& m);

} // namespace pe::python

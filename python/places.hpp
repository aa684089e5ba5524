#pragma once

#include <optional>
#include <vector>

#include <pybind11/pybind11.h>

#include "core/place.hpp"

namespace pe::python {

/// places=[...]: pe_actor.Place objects or their names ("cpu:0", "gpu:1"). Throws
/// pybind11::type_error / value_error naming the bad entry.
std::vector<place> to_places(pybind11::handle places);

/// Paddle's cpu_places: `count` CPU places; none given takes CPU_NUM from the environment,
/// or 1. Throws pybind11::value_error for a count below 1.
std::vector<place> cpu_places(std::optional<int> count);

} // namespace pe::python

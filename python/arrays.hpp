#pragma once

#include <string>

#include <pybind11/numpy.h>

#include "core/tensor.hpp"
#include "graph/exec/feed_check.hpp"

namespace pe::python {

/// numpy arrays to tensors and back.
///
/// A tensor cannot wrap memory it does not own (core/tensor.hpp has no such constructor),
/// so an ordinary numpy array is copied once into a tensor. Arrays this module makes are
/// different: their memory is a tensor's (fetched values, engine_array), and such an array, or
/// a C-contiguous row range of it (a[i:j]), becomes a tensor sharing that memory: fed without
/// a copy, read by the places in place.

/// `value` (a numpy array, or anything numpy.asarray takes) as a tensor of the same dtype and
/// shape. Throws pybind11::type_error naming `what` when numpy cannot convert it or its dtype
/// has no tensor counterpart.
tensor to_tensor(pybind11::handle value, const std::string& what);

/// A numpy array over `value`'s memory, which it keeps alive (no copy). Throws pe::error for
/// an uninitialised tensor or a dtype numpy lacks (BF16).
pybind11::array to_array(tensor value);

/// feed={name: array}: each value through to_tensor. Throws pybind11::type_error for a
/// feed that is not a dict with str keys.
feed_map to_feeds(pybind11::handle feed);

} // namespace pe::python

#include "python/arrays.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "python/bindings.hpp"

namespace py = pybind11;

namespace pe::python {

namespace {

constexpr const char* tensor_capsule = "pe_actor.tensor";

/// The numpy dtype for a tensor's elements.
py::dtype numpy_dtype(dtype type) {
  switch (type) {
    case dtype::boolean: return py::dtype::of<bool>();
    case dtype::uint8: return py::dtype::of<std::uint8_t>();
    case dtype::int8: return py::dtype::of<std::int8_t>();
    case dtype::int16: return py::dtype::of<std::int16_t>();
    case dtype::int32: return py::dtype::of<std::int32_t>();
    case dtype::int64: return py::dtype::of<std::int64_t>();
    case dtype::fp16: return py::dtype("float16");
    case dtype::fp32: return py::dtype::of<float>();
    case dtype::fp64: return py::dtype::of<double>();
    default: throw error("a " + to_string(type) + " tensor has no numpy dtype");
  }
}

/// The tensor dtype for numpy's (native byte order), if there is one. Types the engine does
/// not run (FP64, INT16, ...) are mapped too, so that the feed check names the mismatch.
std::optional<dtype> tensor_dtype(const py::dtype& type) {
  const auto size = type.itemsize();
  switch (type.kind()) {
    case 'b': return dtype::boolean;
    case 'u': if (size == 1) return dtype::uint8; break;
    case 'i':
      if (size == 1) return dtype::int8;
      if (size == 2) return dtype::int16;
      if (size == 4) return dtype::int32;
      if (size == 8) return dtype::int64;
      break;
    case 'f':
      if (size == 2) return dtype::fp16;
      if (size == 4) return dtype::fp32;
      if (size == 8) return dtype::fp64;
      break;
  }
  return std::nullopt;
}

/// The tensor whose memory `array` views, when a to_array capsule owns that memory.
const tensor* owning_tensor(const py::array& array) {
  py::object base = array.base(); // null when the array owns its memory
  // numpy points a view's base at the array that owns the memory (or at what owns it).
  while (base && py::isinstance<py::array>(base)) base = base.attr("base");
  if (!base || !PyCapsule_CheckExact(base.ptr())) return nullptr;
  const char* name = PyCapsule_GetName(base.ptr());
  if (name == nullptr || std::strcmp(name, tensor_capsule) != 0) return nullptr;
  return static_cast<const tensor*>(PyCapsule_GetPointer(base.ptr(), tensor_capsule));
}

/// `array` as a tensor sharing its memory: when it is C-contiguous and its memory is all of
/// a to_array tensor's, or rows [i, j) of it.
std::optional<tensor> shared_view(const py::array& array, dtype type) {
  const tensor* owner = owning_tensor(array);
  if (owner == nullptr || owner->type() != type || !(array.flags() & py::array::c_style))
    return std::nullopt;
  const shape_t shape(array.shape(), array.shape() + array.ndim());
  const auto* data = static_cast<const std::byte*>(array.data());
  const auto* first = static_cast<const std::byte*>(owner->raw());
  if (shape == owner->shape() && data == first) return *owner;
  if (shape.empty() || shape.size() != owner->rank() || owner->dim(0) == 0 ||
      !std::equal(shape.begin() + 1, shape.end(), owner->shape().begin() + 1))
    return std::nullopt;
  const auto row_bytes = static_cast<std::ptrdiff_t>(owner->bytes() / owner->dim(0));
  const std::ptrdiff_t offset = data - first;
  if (row_bytes == 0 || offset < 0 || offset % row_bytes != 0) return std::nullopt;
  const std::int64_t begin = offset / row_bytes;
  if (begin + shape[0] > owner->dim(0)) return std::nullopt;
  return owner->slice(begin, begin + shape[0]);
}

} // namespace

tensor to_tensor(py::handle value, const std::string& what) {
  py::array array = py::array::ensure(value);
  if (!array)
    throw py::type_error(what + ": expected a numpy array, got " +
                         std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  if (!array.dtype().attr("isnative").cast<bool>())
    array = array.attr("astype")(array.dtype().attr("newbyteorder")("="));
  const std::optional<dtype> type = tensor_dtype(array.dtype());
  if (!type)
    throw py::type_error(what + ": numpy dtype " + std::string(py::str(array.dtype())) +
                         " has no engine dtype (FP32, INT64, INT32, UINT8 and BOOL run)");
  if (auto view = shared_view(array, *type)) return *view;
  array = py::array::ensure(array, py::array::c_style);
  tensor t(*type, shape_t(array.shape(), array.shape() + array.ndim()));
  if (t.bytes() > 0) std::memcpy(t.raw(), array.data(), t.bytes());
  return t;
}

py::array to_array(tensor value) {
  if (!value.initialized()) throw error("to_array: the tensor has no value");
  const py::dtype type = numpy_dtype(value.type());
  const std::vector<py::ssize_t> shape(value.shape().begin(), value.shape().end());
  auto* owner = new tensor(std::move(value));
  py::capsule keep(owner, tensor_capsule, [](PyObject* capsule) {
    delete static_cast<tensor*>(PyCapsule_GetPointer(capsule, tensor_capsule));
  });
  return py::array(type, shape, {}, owner->raw(), keep);
}

feed_map to_feeds(py::handle feed) {
  feed_map feeds;
  if (feed.is_none()) return feeds;
  if (!py::isinstance<py::dict>(feed))
    throw py::type_error("feed must be a dict {name: numpy array}, got " +
                         std::string(py::str(py::type::handle_of(feed).attr("__name__"))));
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(feed)) {
    if (!py::isinstance<py::str>(key)) throw py::type_error("feed names must be str");
    const auto name = key.cast<std::string>();
    feeds.emplace(name, to_tensor(value, "feed '" + name + "'"));
  }
  return feeds;
}

void bind_arrays(py::module_& m) {
  m.def(
      "engine_array",
      [](py::handle value) {
        py::array array = py::array::ensure(value);
        if (array && owning_tensor(array) != nullptr) return array;
        return to_array(to_tensor(value, "engine_array"));
      },
      py::arg("array"),
      "A copy of `array` in memory the engine owns (an array that already is, unchanged).\n"
      "Feeding it, or a row range a[i:j] of it, passes its memory to the places without\n"
      "the copy an ordinary numpy array costs. Fetched arrays are such arrays too.");
}

} // namespace pe::python

#include "python/places.hpp"

#include <cstdlib>
#include <string>

#include "core/place_list.hpp"
#include "python/bindings.hpp"

namespace py = pybind11;

namespace pe::python {

namespace {

/// "cpu:0" or "gpu:1" as a place (core/place_list.hpp reads it, as it reads pe-actor-run's
/// --places); throws pybind11::value_error otherwise.
place parse_place(const std::string& name) {
  if (const auto p = parse_place_name(name)) return *p;
  throw py::value_error("a place is named cpu:N or gpu:N, got '" + name + "'");
}

} // namespace

std::vector<place> cpu_places(std::optional<int> count) {
  if (!count) {
    const char* env = std::getenv("CPU_NUM");
    count = env != nullptr ? std::atoi(env) : 1;
    if (*count < 1)
      throw py::value_error("CPU_NUM must be a positive number of places, got '" +
                            std::string(env) + "'");
  }
  if (*count < 1) throw py::value_error("cpu_places needs at least one place");
  return make_cpu_places(*count);
}

std::vector<place> to_places(py::handle places) {
  if (py::isinstance<py::str>(places) || !py::isinstance<py::sequence>(places))
    throw py::type_error("places must be a list of pe_actor.Place (cpu_places(n)) or names "
                         "like 'cpu:0'");
  std::vector<place> out;
  for (py::handle p : places) {
    if (py::isinstance<py::str>(p)) out.push_back(parse_place(p.cast<std::string>()));
    else if (py::isinstance<place>(p)) out.push_back(p.cast<place>());
    else throw py::type_error("places: expected a pe_actor.Place or a name like 'cpu:0', got " +
                              std::string(py::str(py::repr(p))));
  }
  return out;
}

void bind_places(py::module_& m) {
  py::class_<place>(m, "Place", "Where a replica runs: cpu:N or gpu:N.")
      .def(py::init(&parse_place), py::arg("name"))
      .def_property_readonly("kind",
                             [](const place& p) { return p.type.name(); })
      .def_readonly("index", &place::index)
      .def("__eq__", [](const place& a, const place& b) { return a == b; }, py::is_operator())
      .def("__hash__", [](const place& p) { return py::hash(py::str(to_string(p))); })
      .def("__str__", [](const place& p) { return to_string(p); })
      .def("__repr__", [](const place& p) { return "Place('" + to_string(p) + "')"; });
  m.def("CPUPlace", &place::cpu, py::arg("index") = 0, "The CPU place cpu:index.");
  m.def("cpu_places", &cpu_places, py::arg("device_count") = py::none(),
        "CPU places cpu:0 .. cpu:n-1; with no count, CPU_NUM from the environment, or 1 "
        "(as Paddle's cpu_places).");
}

} // namespace pe::python

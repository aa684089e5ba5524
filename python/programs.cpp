#include "python/programs.hpp"

#include "graph/program_info.hpp"
#include "graph/program_io.hpp"
#include "python/bindings.hpp"

namespace py = pybind11;

namespace pe::python {

namespace {

program_ptr parse_bytes(const py::bytes& data, const std::string& origin) {
  return std::make_shared<proto::ProgramDesc>(parse_program(std::string(data), origin));
}

/// None for "", so Python sees a missing role as None.
py::object name_or_none(const std::string& name) {
  return name.empty() ? py::none() : py::object(py::str(name));
}

} // namespace

program_ptr to_program(py::handle source, const std::string& what) {
  if (py::isinstance<proto::ProgramDesc>(source)) return source.cast<program_ptr>();
  if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) ||
      py::isinstance<py::memoryview>(source))
    return parse_bytes(py::bytes(py::module_::import("builtins").attr("bytes")(source)), what);
  const py::object os = py::module_::import("os");
  if (py::isinstance<py::str>(source) || py::isinstance(source, os.attr("PathLike")))
    return std::make_shared<proto::ProgramDesc>(load_program(os.attr("fspath")(source).cast<std::string>()));
  if (py::hasattr(source, "desc") && py::hasattr(source.attr("desc"), "serialize_to_string"))
    return parse_bytes(source.attr("desc").attr("serialize_to_string")(), what);
  throw py::type_error(what + ": expected a pe_actor.Program, bytes (a serialized ProgramDesc) "
                       "or a path, got " +
                       std::string(py::str(py::type::handle_of(source).attr("__name__"))));
}

void bind_programs(py::module_& m) {
  py::class_<proto::ProgramDesc, program_ptr>(
      m, "Program",
      "A ProgramDesc (Paddle's framework.proto): from a serialized program (bytes, binary or\n"
      "text), a file, or a Paddle Program.")
      .def(py::init([](py::handle source) { return to_program(source, "Program"); }),
           py::arg("source"))
      .def_static(
          "parse", [](const py::bytes& data, const std::string& origin) { return parse_bytes(data, origin); },
          py::arg("data"), py::arg("origin") = "<bytes>",
          "A program from serialized bytes, binary or text; `origin` names it in errors.")
      .def_static(
          "load", [](const std::string& path) { return std::make_shared<proto::ProgramDesc>(load_program(path)); },
          py::arg("path"), "A program from a file Paddle (or save) wrote, binary or text.")
      .def(
          "serialize",
          [](const proto::ProgramDesc& p, bool text) {
            return py::bytes(serialize_program(p, text ? program_format::text : program_format::binary));
          },
          py::arg("text") = false, "The program's bytes: binary (serialize_to_string) or text.")
      .def(
          "save",
          [](const proto::ProgramDesc& p, const std::string& path, bool text) {
            save_program(p, path, text ? program_format::text : program_format::binary);
          },
          py::arg("path"), py::arg("text") = false)
      .def_property_readonly(
          "feeds", [](const proto::ProgramDesc& p) { return analyze_program(p).feeds; },
          "The variables every run must feed, in order of first use.")
      .def_property_readonly(
          "loss", [](const proto::ProgramDesc& p) { return name_or_none(analyze_program(p).loss); },
          "The loss the program's backward pass starts from (op_role Backward|Loss), or None.")
      .def_property_readonly(
          "accuracy", [](const proto::ProgramDesc& p) { return name_or_none(analyze_program(p).accuracy); },
          "The output of the program's accuracy op, or None.")
      .def_property_readonly("num_ops", [](const proto::ProgramDesc& p) {
        return p.blocks_size() == 0 ? 0 : p.blocks(0).ops_size();
      })
      .def("__repr__", [](const proto::ProgramDesc& p) {
        const int ops = p.blocks_size() == 0 ? 0 : p.blocks(0).ops_size();
        const int vars = p.blocks_size() == 0 ? 0 : p.blocks(0).vars_size();
        return "Program(" + std::to_string(ops) + " ops, " + std::to_string(vars) + " variables)";
      });
}

} // namespace pe::python

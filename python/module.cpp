// The pe_actor Python module: PE-Actor's executor with the names Paddle users know
// (ParallelExecutor, BuildStrategy, ExecutionStrategy, cpu_places), numpy feeds and fetches.
#include <pybind11/pybind11.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "python/bindings.hpp"

namespace {

/// Refuses numpy 2 when the module was built with a pybind11 older than 2.12: those read
/// numpy's dtype structure with numpy 1's layout, so every array would look like an unknown
/// type (or worse). A clear ImportError at import instead of a wrong feed later.
void check_numpy_supported() {
#if PYBIND11_VERSION_HEX < 0x020C0000
  const auto version = pybind11::module_::import("numpy").attr("__version__").cast<std::string>();
  if (std::atoi(version.c_str()) >= 2)
    throw pybind11::import_error(
        "pe_actor was built with pybind11 " PYBIND11_TOSTRING(PYBIND11_VERSION_MAJOR) "." //
        PYBIND11_TOSTRING(PYBIND11_VERSION_MINOR) ", which cannot read the arrays of numpy " +
        version + " (pybind11 2.12 or later can). Install the package with pip (pip install ., "
                  "which builds with pybind11 from PyPI) or use numpy 1.x (Debian's python3-numpy).");
#endif
}

} // namespace

PYBIND11_MODULE(pe_actor, m) {
  check_numpy_supported();
  m.doc() = "PE-Actor: Paddle's ParallelExecutor as actors. Trains and runs ProgramDescs "
            "data-parallel on several places, fed and fetched as numpy arrays.";
  // Every engine error (a bad feed, an invalid program, a failing kernel) arrives as
  // pe_actor.Error, a RuntimeError carrying the engine's message.
  pybind11::register_exception<pe::error>(m, "Error", PyExc_RuntimeError);
  pe::python::bind_arrays(m);
  pe::python::bind_places(m);
  pe::python::bind_strategies(m);
  pe::python::bind_programs(m);
  pe::python::bind_models(m);
  pe::python::bind_executor(m);
}

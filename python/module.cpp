// The pe_actor Python module: PE-Actor's executor with the names Paddle users know
// (ParallelExecutor, BuildStrategy, ExecutionStrategy, cpu_places), numpy feeds and fetches.
#include <pybind11/pybind11.h>

#include "devices/error.hpp"
#include "python/bindings.hpp"

PYBIND11_MODULE(pe_actor, m) {
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

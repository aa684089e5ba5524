#include "python/strategies.hpp"

#include <cmath>
#include <string>

#include "python/bindings.hpp"

namespace py = pybind11;

namespace pe::python {

build_strategy python_build_strategy::engine() const {
  build_strategy b;
  b.reduce = reduce_strategy;
  b.scale = gradient_scale_strategy;
  if (fuse_all_reduce_ops) {
    if (!(fuse_all_reduce_mb > 0 && std::isfinite(fuse_all_reduce_mb)))
      throw py::value_error("BuildStrategy.fuse_all_reduce_mb must be a positive size in MiB, got " +
                            std::to_string(fuse_all_reduce_mb));
    b.fuse_all_reduce_bytes = static_cast<std::int64_t>(fuse_all_reduce_mb * 1024 * 1024);
  }
  if (max_tensor_bytes <= 0)
    throw py::value_error("BuildStrategy.max_tensor_bytes must be positive, got " + std::to_string(max_tensor_bytes));
  b.max_tensor_bytes = max_tensor_bytes;
  return b;
}

build_strategy to_build_strategy(py::handle strategy) {
  return strategy.is_none() ? build_strategy{} : strategy.cast<const python_build_strategy&>().engine();
}

execution_strategy to_execution_strategy(py::handle strategy) {
  return strategy.is_none() ? execution_strategy{} : strategy.cast<execution_strategy>();
}

void bind_strategies(py::module_& m) {
  py::class_<python_build_strategy> build(
      m, "BuildStrategy", "How gradients are combined across places (Paddle's BuildStrategy).");
  py::enum_<build_strategy::reduce_mode>(build, "ReduceStrategy")
      .value("AllReduce", build_strategy::reduce_mode::all_reduce,
             "every place gets the summed gradients and runs the optimizer")
      .value("Reduce", build_strategy::reduce_mode::reduce,
             "each parameter's owner place sums its gradient, updates it and broadcasts it");
  py::enum_<build_strategy::gradient_scale>(build, "GradientScaleStrategy")
      .value("CoeffNumDevice", build_strategy::gradient_scale::coeff_num_device,
             "the loss gradient on a place is its share of the global batch")
      .value("One", build_strategy::gradient_scale::one, "the loss gradient is 1 on every place")
      .value("Customized", build_strategy::gradient_scale::customized,
             "the caller feeds the loss gradient (<loss>@GRAD)");
  build.def(py::init<>())
      .def_readwrite("reduce_strategy", &python_build_strategy::reduce_strategy)
      .def_readwrite("gradient_scale_strategy", &python_build_strategy::gradient_scale_strategy)
      .def_readwrite("fuse_all_reduce_ops", &python_build_strategy::fuse_all_reduce_ops,
                     "all-reduce gradients in buckets of fuse_all_reduce_mb")
      .def_readwrite("fuse_all_reduce_mb", &python_build_strategy::fuse_all_reduce_mb,
                     "bucket size in MiB when fuse_all_reduce_ops (default 32)")
      .def_readwrite("max_tensor_bytes", &python_build_strategy::max_tensor_bytes,
                     "the largest tensor a program may declare or infer, in bytes (default half "
                     "the physical memory); larger ones are refused when the executor is built")
      .def("__repr__", [](const python_build_strategy& s) {
        return "BuildStrategy(reduce_strategy=" + std::string(py::str(py::cast(s.reduce_strategy))) +
               ", gradient_scale_strategy=" + std::string(py::str(py::cast(s.gradient_scale_strategy))) +
               ", fuse_all_reduce_ops=" + (s.fuse_all_reduce_ops ? "True" : "False") +
               ", fuse_all_reduce_mb=" + std::string(py::str(py::cast(s.fuse_all_reduce_mb))) + ")";
      });

  py::class_<execution_strategy> exec(m, "ExecutionStrategy",
                                      "How the op actors are scheduled (Paddle's ExecutionStrategy).");
  py::enum_<sync_mode>(exec, "SyncMode")
      .value("Event", sync_mode::event, "a reader on another stream waits with a stream wait")
      .value("Wait", sync_mode::wait, "a reader's op actor blocks on the writer's event");
  exec.def(py::init<>())
      .def_readwrite("num_threads", &execution_strategy::num_threads,
                     "worker threads running the op actors (default 1)")
      .def_readwrite("sync", &execution_strategy::sync)
      .def_readwrite("check_nan_inf", &execution_strategy::check_nan_inf,
                     "check every op's FP32 outputs after its kernel; a NaN or infinity fails the "
                     "step naming the op, place and variable (Paddle's FLAGS_check_nan_inf)")
      .def("__repr__", [](const execution_strategy& s) {
        return "ExecutionStrategy(num_threads=" + std::to_string(s.num_threads) +
               ", sync=" + std::string(py::str(py::cast(s.sync))) +
               ", check_nan_inf=" + (s.check_nan_inf ? "True" : "False") + ")";
      });
}

} // namespace pe::python

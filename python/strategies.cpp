#include "python/strategies.hpp"

#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "python/bindings.hpp"

namespace py = pybind11;

namespace pe::python {

build_strategy python_build_strategy::engine() const {
  build_strategy b;
  b.reduce = reduce_strategy;
  b.scale = gradient_scale_strategy;
  b.sparse_exchange_mode = sparse_exchange_mode;
  b.all_reduce_groups = all_reduce_groups;
  if (fuse_all_reduce_ops) {
    if (!(fuse_all_reduce_mb > 0 && std::isfinite(fuse_all_reduce_mb)))
      throw py::value_error("BuildStrategy.fuse_all_reduce_mb must be a positive size in MiB, got " +
                            std::to_string(fuse_all_reduce_mb));
    b.fuse_all_reduce_bytes = static_cast<std::int64_t>(fuse_all_reduce_mb * 1024 * 1024);
  }
  if (max_tensor_bytes <= 0)
    throw py::value_error("BuildStrategy.max_tensor_bytes must be positive, got " + std::to_string(max_tensor_bytes));
  b.max_tensor_bytes = max_tensor_bytes;
  b.sync_batch_norm = sync_batch_norm;
  return b;
}

build_strategy to_build_strategy(py::handle strategy) {
  return strategy.is_none() ? build_strategy{} : strategy.cast<const python_build_strategy&>().engine();
}

namespace {

/// Hands a stall report's text to `sink` (a Python callable; None: sys.stderr's write) from
/// the thread that runs the step, which released the GIL to run it. The sink is held
/// through a pointer whose deleter takes the GIL: the engine's copies of the strategy may be
/// destroyed on any thread.
std::function<void(const stall_report&)> report_sink(const py::object& sink) {
  std::shared_ptr<py::object> held(new py::object(sink), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return [held](const stall_report& report) {
    py::gil_scoped_acquire gil;
    try {
      if (held->is_none()) py::module_::import("sys").attr("stderr").attr("write")(report.text);
      else (*held)(report.text);
    } catch (py::error_already_set& e) {
      // A failing sink must not change the step's outcome: its error is shown, not raised.
      e.discard_as_unraisable("pe_actor.ExecutionStrategy.on_stall_report");
    }
  };
}

} // namespace

execution_strategy python_execution_strategy::engine() const {
  if (!(stall_timeout >= 0 && std::isfinite(stall_timeout)))
    throw py::value_error("ExecutionStrategy.stall_timeout must be 0 (off) or a positive number of "
                          "seconds, got " + std::to_string(stall_timeout));
  if (!on_stall_report.is_none() && !PyCallable_Check(on_stall_report.ptr()))
    throw py::value_error("ExecutionStrategy.on_stall_report must be callable (it is given each "
                          "report's text) or None");
  execution_strategy e;
  e.num_threads = num_threads;
  e.sync = sync;
  e.check_nan_inf = check_nan_inf;
  e.cuda_graphs = cuda_graphs;
  e.pin_places = !pin_places ? place_pinning::when_full : *pin_places ? place_pinning::always : place_pinning::never;
  e.actor_per_op = actor_per_op;
  e.overlap_steps = overlap_steps;
  e.stall_timeout_s = stall_timeout;
  e.on_stall = on_stall;
  e.on_report = report_sink(on_stall_report);
  return e;
}

execution_strategy to_execution_strategy(py::handle strategy) {
  return strategy.is_none() ? python_execution_strategy{}.engine()
                            : strategy.cast<const python_execution_strategy&>().engine();
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
  py::enum_<build_strategy::all_reduce_grouping>(build, "AllReduceGroups")
      .value("Layer", build_strategy::all_reduce_grouping::per_layer,
             "one all-reduce for the gradients of parameters whose names agree before the first "
             "'.' (fc_0.w_0, fc_0.b_0), produced one after the other: Paddle 2's default grouping")
      .value("Gradient", build_strategy::all_reduce_grouping::per_gradient, "one all-reduce per gradient");
  py::enum_<sparse_exchange>(build, "SparseExchange")
      .value("Auto", sparse_exchange::automatic,
             "per step, all-reduce the table densely when the gathered rows would move more bytes")
      .value("Sparse", sparse_exchange::sparse, "gather every place's rows and values")
      .value("Dense", sparse_exchange::dense,
             "all-reduce the table densely; the optimizer gets the touched rows with their sums");
  build.def(py::init<>())
      .def_readwrite("reduce_strategy", &python_build_strategy::reduce_strategy)
      .def_readwrite("gradient_scale_strategy", &python_build_strategy::gradient_scale_strategy)
      .def_readwrite("fuse_all_reduce_ops", &python_build_strategy::fuse_all_reduce_ops,
                     "all-reduce gradients in buckets of fuse_all_reduce_mb")
      .def_readwrite("fuse_all_reduce_mb", &python_build_strategy::fuse_all_reduce_mb,
                     "bucket size in MiB when fuse_all_reduce_ops (default 32)")
      .def_readwrite("all_reduce_groups", &python_build_strategy::all_reduce_groups,
                     "without fuse_all_reduce_ops, which gradients share an all-reduce: "
                     "AllReduceGroups.Layer (default) or Gradient (pe-actor-run's --allreduce-groups); "
                     "the sums are the same either way")
      .def_readwrite("sparse_exchange", &python_build_strategy::sparse_exchange_mode,
                     "how a sparse (SELECTED_ROWS) gradient is exchanged across places and "
                     "processes: SparseExchange.Auto (default), Sparse or Dense (pe-actor-run's "
                     "--sparse-exchange)")
      .def_readwrite("max_tensor_bytes", &python_build_strategy::max_tensor_bytes,
                     "the largest tensor a program may declare or infer, in bytes (default half "
                     "the physical memory); larger ones are refused when the executor is built")
      .def_readwrite("sync_batch_norm", &python_build_strategy::sync_batch_norm,
                     "batch_norm in training takes its batch statistics over every place and "
                     "process, so N places normalise as one place with the global batch "
                     "(Paddle's BuildStrategy.sync_batch_norm, pe-actor-run's --sync-batch-norm; "
                     "default False: each place normalises its own rows)")
      .def("__repr__", [](const python_build_strategy& s) {
        return "BuildStrategy(reduce_strategy=" + std::string(py::str(py::cast(s.reduce_strategy))) +
               ", gradient_scale_strategy=" + std::string(py::str(py::cast(s.gradient_scale_strategy))) +
               ", fuse_all_reduce_ops=" + (s.fuse_all_reduce_ops ? "True" : "False") +
               ", fuse_all_reduce_mb=" + std::string(py::str(py::cast(s.fuse_all_reduce_mb))) +
               ", all_reduce_groups=" + std::string(py::str(py::cast(s.all_reduce_groups))) +
               ", sparse_exchange=" + std::string(py::str(py::cast(s.sparse_exchange_mode))) +
               ", sync_batch_norm=" + (s.sync_batch_norm ? "True" : "False") + ")";
      });

  py::class_<python_execution_strategy> exec(m, "ExecutionStrategy",
                                             "How the op actors are scheduled (Paddle's ExecutionStrategy).");
  py::enum_<sync_mode>(exec, "SyncMode")
      .value("Event", sync_mode::event, "a reader on another stream waits with a stream wait")
      .value("Wait", sync_mode::wait, "a reader's op actor blocks on the writer's event");
  py::enum_<stall_action>(exec, "StallAction")
      .value("Fail", stall_action::fail, "a stalled step fails with an error naming the root cause")
      .value("Report", stall_action::report, "a stalled step reports and keeps waiting");
  exec.def(py::init<>())
      .def_readwrite("num_threads", &python_execution_strategy::num_threads,
                     "worker threads running the op actors (default 1)")
      .def_readwrite("sync", &python_execution_strategy::sync)
      .def_readwrite("check_nan_inf", &python_execution_strategy::check_nan_inf,
                     "check every op's FP32 outputs after its kernel; a NaN or infinity fails the "
                     "step naming the op, place and variable (Paddle's FLAGS_check_nan_inf)")
      .def_readwrite("cuda_graphs", &python_execution_strategy::cuda_graphs,
                     "GPU places of one GPU: after two steps of the same feed shapes, capture a "
                     "step as a CUDA graph and replay it for later steps of those shapes "
                     "(pe-actor-run's --cuda-graphs; default False); refused on CPU places")
      .def_readwrite("pin_places", &python_execution_strategy::pin_places,
                     "pin each CPU place's device thread to a core of its own (pe-actor-run's "
                     "--pin-places): None (default) where the places are as many as the cores "
                     "this process may use, True always, False never; two jobs that both pin "
                     "share the same cores")
      .def_readwrite("overlap_steps", &python_execution_strategy::overlap_steps,
                     "on CPU places of one process, run() returns once the fetches and every op "
                     "reading the feeds have run, and the rest of the step (the optimizer's last "
                     "updates) overlaps the next step's start: the same results bit for bit "
                     "(pe-actor-run's --no-overlap-steps turns it off; default True). Reading "
                     "a variable waits for it; a failure of that rest fails the next call")
      .def_readwrite("actor_per_op", &python_execution_strategy::actor_per_op,
                     "fire every op by a message to its own actor (pe-actor-run's "
                     "--actor-per-op; default False: an op whose inputs all come from one "
                     "firing group on its place and stream is enqueued by that group's firing, "
                     "the same work in the same order with fewer messages; edges that others "
                     "imply send none, a group waiting for one message is fired by its "
                     "sender, one hearing only from the step's thread by that thread)")
      .def_readwrite("stall_timeout", &python_execution_strategy::stall_timeout,
                     "seconds a step may make no progress (no op fires, no kernel, transfer or "
                     "stream item finishes) before it stalls (pe-actor-run's --stall-timeout; "
                     "default 300, 0 turns the watch off)")
      .def_readwrite("on_stall", &python_execution_strategy::on_stall,
                     "what a stalled step does after its report (--on-stall): Fail (default) or "
                     "Report")
      .def_readwrite("on_stall_report", &python_execution_strategy::on_stall_report,
                     "called with each stall report's text (who waits for whom, the root cause); "
                     "None (default): the report goes to sys.stderr")
      .def("__repr__", [](const python_execution_strategy& s) {
        return "ExecutionStrategy(num_threads=" + std::to_string(s.num_threads) +
               ", sync=" + std::string(py::str(py::cast(s.sync))) +
               ", check_nan_inf=" + (s.check_nan_inf ? "True" : "False") +
               ", cuda_graphs=" + (s.cuda_graphs ? "True" : "False") +
               ", pin_places=" + (!s.pin_places ? "None" : *s.pin_places ? "True" : "False") +
               ", actor_per_op=" + (s.actor_per_op ? "True" : "False") +
               ", overlap_steps=" + (s.overlap_steps ? "True" : "False") +
               ", stall_timeout=" + std::string(py::str(py::cast(s.stall_timeout))) +
               ", on_stall=" + std::string(py::str(py::cast(s.on_stall))) + ")";
      });
}

} // namespace pe::python

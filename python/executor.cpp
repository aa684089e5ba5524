#include "python/executor.hpp"

#include "actors/trace_export.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/program_info.hpp"
#include "python/arrays.hpp"
#include "python/bindings.hpp"
#include "python/places.hpp"
#include "python/programs.hpp"
#include "python/strategies.hpp"

namespace py = pybind11;

namespace pe::python {

namespace {

/// A variable's name as given: a str, or a Paddle Variable (its .name).
std::string var_name(py::handle v, const std::string& what) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::hasattr(v, "name") && py::isinstance<py::str>(v.attr("name")))
    return v.attr("name").cast<std::string>();
  throw py::type_error(what + ": expected a variable name (str), got " + std::string(py::repr(v)));
}

std::vector<std::string> to_fetch_list(py::handle fetch_list) {
  std::vector<std::string> names;
  if (fetch_list.is_none()) return names;
  if (py::isinstance<py::str>(fetch_list) || !py::isinstance<py::sequence>(fetch_list))
    throw py::type_error("fetch_list must be a list of variable names");
  for (py::handle v : fetch_list) names.push_back(var_name(v, "fetch_list"));
  return names;
}

/// loss_name as given, checked against the loss the program's backward pass starts from.
std::string checked_loss_name(py::handle loss_name, const proto::ProgramDesc& main) {
  const std::string loss = analyze_program(main).loss;
  if (loss_name.is_none()) return loss;
  const std::string given = var_name(loss_name, "loss_name");
  if (!loss.empty() && given != loss)
    throw py::value_error("loss_name '" + given + "' is not the program's loss: its backward pass "
                          "starts from '" + loss + "'");
  return given;
}

std::unique_ptr<parallel_executor> make_executor(py::handle places, py::handle startup_program,
                                                 const proto::ProgramDesc& main,
                                                 py::handle build_strategy, py::handle exec_strategy,
                                                 python_executor* share) {
  const auto build = to_build_strategy(build_strategy);
  const auto exec = to_execution_strategy(exec_strategy);
  if (share != nullptr) {
    const parallel_executor& from = share->engine();
    if (!startup_program.is_none())
      throw py::value_error("share_vars_from: the startup program ran in the executor whose "
                            "variables are shared; give none");
    if (!places.is_none()) {
      std::vector<std::string> names;
      for (const place& p : to_places(places)) names.push_back(to_string(p));
      if (names != from.place_names())
        throw py::value_error("share_vars_from: places must be those of the shared executor (" +
                              py::str(", ").attr("join")(from.place_names()).cast<std::string>() + ")");
    }
    if (!exec_strategy.is_none() && (exec.num_threads != from.num_threads() || exec.sync != from.sync()))
      throw py::value_error("share_vars_from: exec_strategy must be the shared executor's (the "
                            "executors share its threads)");
    py::gil_scoped_release release;
    return std::make_unique<parallel_executor>(main, from, build);
  }
  if (startup_program.is_none()) throw py::value_error("startup_program is required");
  const program_ptr startup = to_program(startup_program, "startup_program");
  const std::vector<place> where = places.is_none() ? cpu_places(std::nullopt) : to_places(places);
  py::gil_scoped_release release;
  return std::make_unique<parallel_executor>(where, *startup, main, build, exec);
}

py::list to_arrays(std::vector<tensor> values) {
  py::list out;
  for (auto& v : values) out.append(to_array(std::move(v)));
  return out;
}

} // namespace

python_executor::python_executor(py::handle places, py::handle startup_program,
                                 py::handle main_program, py::handle loss_name,
                                 py::handle build_strategy, py::handle exec_strategy,
                                 python_executor* share_vars_from)
    : run_lock_(share_vars_from != nullptr ? share_vars_from->run_lock_ : std::make_shared<std::mutex>()) {
  if (main_program.is_none()) throw py::value_error("main_program is required");
  const program_ptr main = to_program(main_program, "main_program");
  loss_name_ = checked_loss_name(loss_name, *main);
  exe_ = make_executor(places, startup_program, *main, build_strategy, exec_strategy, share_vars_from);
  // A Paddle Program carries the LRScheduler its optimizer was given (and its clones do);
  // a program without the scheduler's variable (a test program) has no rate to write.
  if (py::hasattr(main_program, "lr_scheduler")) {
    const py::object scheduler = main_program.attr("lr_scheduler");
    const bool named = py::hasattr(scheduler, "_var_name");
    if (!named || is_rate_variable(var_name(scheduler.attr("_var_name"), "lr_scheduler._var_name")))
      set_lr_scheduler(scheduler);
  }
}

bool python_executor::is_rate_variable(const std::string& name) const {
  for (const param_spec& p : persistable_specs(exe_->program()))
    if (p.name == name) return p.type == dtype::fp32 && numel_of(p.dims) == 1;
  return false;
}

void python_executor::set_lr_scheduler(py::handle scheduler) {
  if (scheduler.is_none()) {
    lr_scheduler_ = py::none();
    lr_var_.clear();
    return;
  }
  if (!PyCallable_Check(scheduler.ptr()) || !py::hasattr(scheduler, "_var_name"))
    throw py::type_error("lr_scheduler: expected Paddle's LRScheduler protocol (a callable that "
                         "returns the learning rate, with _var_name naming its variable), got " +
                         std::string(py::repr(scheduler)));
  const std::string var = var_name(scheduler.attr("_var_name"), "lr_scheduler._var_name");
  if (!is_rate_variable(var))
    throw py::value_error("lr_scheduler: its _var_name '" + var + "' is not a one-element FP32 "
                          "persistable variable of the program");
  lr_scheduler_ = py::reinterpret_borrow<py::object>(scheduler);
  lr_var_ = var;
}

void python_executor::apply_lr_scheduler() {
  if (lr_scheduler_.is_none()) return;
  const double rate = lr_scheduler_().cast<double>();
  const tensor value = tensor::from_vector(std::vector<float>{static_cast<float>(rate)}, {1});
  locked([&] { exe_->set_persistable(lr_var_, value); });
}

py::list python_executor::run(py::handle feed, py::handle fetch_list, bool return_merged) {
  const feed_map feeds = to_feeds(feed);
  const std::vector<std::string> fetches = to_fetch_list(fetch_list);
  apply_lr_scheduler(); // as Paddle's Executor.run, before the step
  if (return_merged) return to_arrays(locked([&] { return exe_->run(feeds, fetches); }));
  py::list out;
  for (auto& per_place : locked([&] { return exe_->run_per_place(feeds, fetches); }))
    out.append(to_arrays(std::move(per_place)));
  return out;
}

std::vector<std::string> python_executor::load_params(const std::string& path) {
  return locked([&] {
    std::vector<std::string> names;
    for (const auto& [name, value] : pe::load_params(path, exe_->program())) {
      exe_->set_persistable(name, value);
      names.push_back(name);
    }
    return names;
  });
}

void python_executor::save_params(const std::string& path, bool combined) {
  locked([&] {
    param_map values;
    for (const auto& spec : persistable_specs(exe_->program()))
      values[spec.name] = exe_->host_value(spec.name, 0);
    if (combined) write_combined_params(path, values);
    else pe::save_params(path, values);
  });
}

py::array python_executor::get_var(const std::string& name, int p) {
  if (p < 0 || p >= exe_->num_places())
    throw py::index_error("place " + std::to_string(p) + " out of range: the executor has " +
                          std::to_string(exe_->num_places()));
  return to_array(locked([&] { return exe_->host_value(name, p).clone(); }));
}

void python_executor::set_var(const std::string& name, py::handle value) {
  const tensor t = to_tensor(value, "set_var '" + name + "'");
  locked([&] { exe_->set_persistable(name, t); });
}

void python_executor::finish() {
  locked([&] { exe_->finish(); });
}

void python_executor::start_trace(const std::string& path) {
  if (recorder_) throw error("start_trace: a trace to '" + trace_path_ + "' is recording already");
  std::ofstream file(path);
  if (!file) throw error("start_trace: cannot write trace file '" + path + "'");
  auto recorder = std::make_unique<trace_recorder>();
  locked([&] { exe_->trace(recorder.get()); });
  recorder_ = std::move(recorder);
  trace_file_ = std::move(file);
  trace_path_ = path;
}

std::size_t python_executor::stop_trace() {
  if (!recorder_) throw error("stop_trace: no trace is recording (start_trace starts one)");
  const std::vector<trace_event> events = locked([&] {
    exe_->trace(nullptr);
    return recorder_->events();
  });
  recorder_.reset();
  const trace_source source{
      .graph = exe_->graph(), .main = exe_->program(), .place_names = exe_->place_names()};
  write_chrome_trace(trace_file_, source, events);
  trace_file_.close();
  if (!trace_file_) throw error("stop_trace: cannot write trace file '" + trace_path_ + "'");
  return events.size();
}

void bind_executor(py::module_& m) {
  py::class_<python_executor>(
      m, "ParallelExecutor",
      "Paddle's ParallelExecutor: the main program replicated on every place, each op an actor.\n\n"
      "places: pe_actor.cpu_places(n) (or names 'cpu:0'); default cpu_places().\n"
      "startup_program, main_program: a pe_actor.Program, bytes (a serialized ProgramDesc), a\n"
      "path, or a Paddle Program. The startup program runs once, here.\n"
      "loss_name: the loss, checked against the program's (optional).\n"
      "share_vars_from: an executor whose places, threads and variables this one uses (a test\n"
      "program sees the trained parameters); give it no startup program.")
      .def(py::init<py::handle, py::handle, py::handle, py::handle, py::handle, py::handle,
                    python_executor*>(),
           py::arg("places") = py::none(), py::arg("startup_program") = py::none(),
           py::arg("main_program") = py::none(), py::arg("loss_name") = py::none(),
           py::arg("build_strategy") = py::none(), py::arg("exec_strategy") = py::none(),
           py::arg("share_vars_from") = py::none())
      .def("run", &python_executor::run, py::arg("feed") = py::none(),
           py::arg("fetch_list") = py::none(), py::arg("return_merged") = true,
           "Runs one step on the global batch `feed` ({name: array}, split along dim 0 across\n"
           "the places) and returns the fetched variables as numpy arrays: merged (a mean loss\n"
           "or metric: the global batch's value; anything else concatenated along dim 0), or\n"
           "with return_merged=False one list per fetch of each place's value. The GIL is\n"
           "released while the step runs. Raises pe_actor.Error with the engine's message.")
      .def("load_params", &python_executor::load_params, py::arg("path"),
           "Loads persistables Paddle saved (a save_vars/save_persistables directory or a\n"
           "combined file) onto every place; returns their names.")
      .def("save_params", &python_executor::save_params, py::arg("path"), py::arg("combined") = false,
           "Writes every persistable as place 0 holds it: one file each in directory `path`\n"
           "(Paddle's load_vars reads it), or one combined file (combined=True).")
      .def("get_var", &python_executor::get_var, py::arg("name"), py::arg("place") = 0,
           "A copy of variable `name` as place `place` holds it.")
      .def("set_var", &python_executor::set_var, py::arg("name"), py::arg("value"),
           "Replaces persistable `name` (a parameter, an optimizer state) on every place.")
      .def("finish", &python_executor::finish,
           "Waits for the last step's remaining work: with ExecutionStrategy.overlap_steps\n"
           "(the default) run() returns once the fetches and the feeds' readers have run, and\n"
           "the rest (the optimizer's last updates) runs on; get_var, set_var, save_params and\n"
           "the next run() wait for it. Raises pe_actor.Error when it failed; call after the\n"
           "last step to see that step's failure.")
      .def("start_trace", &python_executor::start_trace, py::arg("path"),
           "Records every following step's op firings until stop_trace().")
      .def("stop_trace", &python_executor::stop_trace,
           "Writes the recorded steps to the start_trace path as a Chrome trace (Perfetto,\n"
           "pe-actor-trace read it); returns the number of firings. The steps should share\n"
           "one fetch list: ops are named from the last step's graph.")
      .def_property("lr_scheduler", &python_executor::lr_scheduler, &python_executor::set_lr_scheduler,
                    "Paddle's LRScheduler (or any callable returning the learning rate, with\n"
                    "_var_name naming its FP32 [1] persistable): run() writes its value to that\n"
                    "variable on every place before each step, as Paddle's Executor.run does;\n"
                    "step it yourself. Taken from a Paddle Program's lr_scheduler; None: none.")
      .def_property_readonly("loss_name", [](const python_executor& e) {
        return e.loss_name().empty() ? py::none() : py::object(py::str(e.loss_name()));
      })
      .def_property_readonly("num_places", [](const python_executor& e) { return e.engine().num_places(); })
      .def_property_readonly("place_names", [](const python_executor& e) { return e.engine().place_names(); })
      .def_property_readonly("num_threads", [](const python_executor& e) { return e.engine().num_threads(); })
      .def_property_readonly("program", [](const python_executor& e) {
        return std::make_shared<proto::ProgramDesc>(e.engine().program());
      });
}

} // namespace pe::python

#pragma once

#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pybind11/numpy.h>

#include "actors/parallel_executor.hpp"
#include "actors/trace.hpp"

namespace pe::python {

/// pe_actor.ParallelExecutor: a parallel_executor with Paddle's constructor and run(), numpy
/// feeds and fetches, parameter files and tracing.
///
/// Every call that touches the engine releases the GIL (other Python threads run while a
/// step does) and holds a lock shared by the executors that share variables: the engine
/// lets only one of them run at a time, and Python threads may call from anywhere.
class python_executor {
 public:
  /// Paddle's arguments (see bind_executor). With share_vars_from, places, startup and
  /// exec_strategy come from that executor (given ones must agree).
  python_executor(pybind11::handle places, pybind11::handle startup_program,
                  pybind11::handle main_program, pybind11::handle loss_name,
                  pybind11::handle build_strategy, pybind11::handle exec_strategy,
                  python_executor* share_vars_from);

  /// One step: merged fetches [k], or per place [k][p] when !return_merged.
  pybind11::list run(pybind11::handle feed, pybind11::handle fetch_list, bool return_merged);

  /// Sets every persistable found in `path` (a save_vars directory or a combined file) on
  /// every place; returns their names.
  std::vector<std::string> load_params(const std::string& path);
  /// Writes every persistable as place 0 holds it: DIR/<name> each, or one combined file.
  void save_params(const std::string& path, bool combined);

  /// A copy of variable `name` on place `p`.
  pybind11::array get_var(const std::string& name, int p);
  /// Replaces persistable `name` on every place.
  void set_var(const std::string& name, pybind11::handle value);
  /// Waits for the last step's remaining work (execution_strategy::overlap_steps); raises
  /// its failure.
  void finish();

  /// Paddle's static-graph learning-rate schedule, as Paddle's Executor.run applies it: before
  /// every run(), `scheduler()` (the rate now) is written to the FP32 persistable that
  /// `scheduler._var_name` names, on every place; the caller steps the scheduler, as in
  /// Paddle. A Paddle Program's `lr_scheduler` (optimizer.minimize with an LRScheduler sets
  /// it) is taken by the constructor when the program declares its variable. None removes it
  /// (the variable keeps its last value).
  /// Throws a TypeError for an object without that protocol and a ValueError when the
  /// variable is not a one-element FP32 persistable of the program.
  void set_lr_scheduler(pybind11::handle scheduler);
  pybind11::object lr_scheduler() const { return lr_scheduler_; }

  /// Records every later step until stop_trace, which writes `path` (Chrome trace JSON).
  void start_trace(const std::string& path);
  /// Writes the trace file; returns the number of firings recorded.
  std::size_t stop_trace();

  const parallel_executor& engine() const { return *exe_; }
  const std::string& loss_name() const { return loss_name_; }

 private:
  /// Runs f() without the GIL, holding the run lock.
  template <class F>
  auto locked(F&& f) {
    pybind11::gil_scoped_release release;
    std::lock_guard<std::mutex> guard(*run_lock_);
    return f();
  }

  /// Writes the learning-rate scheduler's rate to its variable (before a step).
  void apply_lr_scheduler();
  /// Whether `name` is a one-element FP32 persistable of the program: a learning rate.
  bool is_rate_variable(const std::string& name) const;

  std::shared_ptr<std::mutex> run_lock_;
  pybind11::object lr_scheduler_ = pybind11::none();
  std::string lr_var_; ///< the scheduler's variable
  std::string loss_name_;
  std::unique_ptr<trace_recorder> recorder_; // outlives every step it records: exe_ goes first
  std::string trace_path_;
  std::ofstream trace_file_;
  std::unique_ptr<parallel_executor> exe_;
};

} // namespace pe::python

#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/exec/feed_check.hpp"
#include "actors/trace.hpp"
#include "apps/run/options.hpp"
#include "graph/models/mlp.hpp"

namespace pe {

/// The executors of one pe-actor-run session behind one interface, so that the training and
/// evaluation loops are the same whichever executor --executor chose.
class engine {
 public:
  virtual ~engine() = default;

  /// One step of the main program on the global batch `feeds`; scalar fetches (the mean
  /// loss) are global-batch values.
  virtual std::vector<tensor> train(const feed_map& feeds,
                                    const std::vector<std::string>& fetch_list) = 0;

  /// One step of the test program, on the trained parameters. Needs options.eval.
  virtual std::vector<tensor> test(const feed_map& feeds,
                                   const std::vector<std::string>& fetch_list) = 0;

  /// Replaces persistable `name` of the main program with a copy of `value` on every place
  /// (--load-params); call between steps.
  virtual void set_persistable(const std::string& name, const tensor& value) = 0;

  /// The steps a checkpoint had run (--load-params): the next step counts as steps + 1,
  /// so that dropout draws what the uninterrupted run would have.
  virtual void set_steps_done(std::int64_t steps) = 0;

  /// The persistable `name` as place 0 holds it, in host memory (--save-params); call
  /// between steps.
  virtual tensor persistable(const std::string& name) const = 0;

  /// Graphviz DOT of the SSA graph the training steps run; valid after the first step.
  /// Throws pe::error for an executor without one.
  virtual std::string training_graph_dot() const = 0;

  /// Records the op firings of the later training steps into `recorder` (nullptr: stop);
  /// call between steps. Throws pe::error for an executor without actors.
  virtual void trace(trace_recorder* recorder) = 0;

  /// What recorded training firings refer to (graph, program, place names); valid after
  /// the first step. Throws pe::error for an executor without actors.
  virtual trace_source training_trace_source() const = 0;

  /// What --cuda-graphs did in training: "CUDA graphs: ..." (graphs made, their device
  /// operations, steps replayed), or why they were off.
  virtual std::string cuda_graph_summary() const { return "CUDA graphs: not used by this executor"; }

  /// This process's rank among the job's processes (--nnodes); 0 alone. Rank 0 writes
  /// the job's outputs.
  virtual int process_rank() const { return 0; }

  /// The rows [first, first + count) of a global batch of `global_batch` rows that this
  /// process trains on: all of them alone.
  virtual std::pair<std::int64_t, std::int64_t> share_of(std::int64_t global_batch) const {
    return {0, global_batch};
  }

  /// train() for a process that feeds only its share (share_of) of a global batch of
  /// `global_batch` rows; the fetches are still global-batch values. In a job, `stop_vote`
  /// (this process's signal, 0 for none) travels with the step's fetches and comes back as
  /// the job's (see agreed_signal); alone it is left as it is.
  ///
  /// `meanwhile(k)` for k = 0 .. pieces - 1 runs while the step's kernels run, if the
  /// executor can overlap them (parallel_executor::run_meanwhile: on the calling thread, or
  /// in the places' idle moments), else after the step: the training loop copies its next
  /// batch there. Its exception comes after the step's own.
  virtual std::vector<tensor> train_share(const feed_map& my_rows, std::int64_t global_batch,
                                          const std::vector<std::string>& fetch_list, int& stop_vote,
                                          const std::function<void(int)>& meanwhile, int pieces) {
    (void)global_batch;
    (void)stop_vote;
    std::vector<tensor> out = train(my_rows, fetch_list);
    for (int k = 0; meanwhile && k < pieces; ++k) meanwhile(k);
    return out;
  }

  /// Whether this process trains in a job of several (--nnodes).
  virtual bool in_job() const { return false; }

  /// The signal that stops the job at this step boundary: the first non-zero `mine` of
  /// every process in rank order, so that all stop together; alone, `mine`.
  virtual int agreed_signal(int mine) { return mine; }

  /// Returns once every process of the job got here, so that none exits while another
  /// still needs it; alone, at once. Throws pe::error when a process failed or was lost.
  virtual void finish() {}
  /// Returns once the last training step's work has all run (its tail may still run when
  /// train returns: execution_strategy::overlap_steps); throws pe::error when it failed.
  virtual void finish_steps() {}
  /// Whether a training step stalled (--on-stall fail) and its work may still hold a place's
  /// thread: destroying the engine would then wait for it (parallel_executor::stalled).
  virtual bool stalled() const { return false; }
};

/// Where the actor executor's stall reports go: execution_strategy's on_report and
/// report_request (SIGUSR1's flag), with --stall-timeout and --on-stall from the options.
struct stall_hooks {
  std::function<void(const stall_report&)> on_report;
  std::atomic<bool>* report_request = nullptr;
};

/// Initialises the parameters with the startup program and builds what `options` asks for:
/// reference executors on one CPU place, or parallel executors over options.places CPU
/// places with options.threads workers, options.reduce and options.fuse_allreduce_bytes();
/// the test program's executor (with options.eval) shares the training executor's variables.
/// Then sets options.blas_threads OpenBLAS threads, overriding the parallel executor's 1.
/// `model` must outlive the engine. Throws pe::error for a program an executor rejects.
/// `stalls` is where the actor executor's stall reports go (none by default).
std::unique_ptr<engine> make_engine(const run_options& options, const model_programs& model,
                                    stall_hooks stalls = {});

} // namespace pe

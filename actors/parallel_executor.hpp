#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actors/feed_check.hpp"
#include "actors/scope.hpp"
#include "graph/proto.hpp"
#include "graph/ssa_graph.hpp"

namespace pe {

struct executor_runtime;
struct executor_state;
class trace_recorder;

/// How the op actors are scheduled.
struct execution_strategy {
  /// Worker threads of the CAF scheduler running every op actor; 0: one per core.
  int num_threads = 0;
};

/// Paddle's ParallelExecutor with every op handle a CAF actor.
///
/// The main program is replicated on every place (data parallelism); each op actor fires
/// when the messages for all its input variable versions of the current step have arrived,
/// runs its kernel on its place's scope, and messages the readers of its outputs. Messages
/// carry only (step, ok); tensors stay in the per-place scopes. Gradients are combined by
/// collective actors (all-reduce, or reduce + broadcast) according to the build strategy.
///
/// Feeds are split along dim 0 across places as evenly as possible (the first
/// batch % places places get one more row; a place may get none). Places read their rows of
/// the caller's tensors in place; feeds some op updates in place are copied first, so the
/// caller's tensors are never modified. With
/// gradient_scale::coeff_num_device the loss gradient on place p is rows_p / batch, so the
/// summed update equals the one for the global-batch mean, also for uneven splits.
///
/// A failing kernel poisons what depends on it: the step drains (every actor still fires
/// exactly once), run() throws the first error with op, place and message, and the
/// executor stays usable. Destroying the executor cancels a step in flight (remaining
/// kernels are skipped), waits for it, and stops every actor.
class parallel_executor {
 public:
  /// Runs `startup` once on place 0 and copies every persistable variable to the other
  /// places. Throws pe::error for a program that fails validation or an unsupported place.
  parallel_executor(std::vector<place> places, const proto::ProgramDesc& startup,
                    const proto::ProgramDesc& main, build_strategy build = {},
                    execution_strategy exec = {});

  /// An executor for another program (typically the test program) over the same places,
  /// threads and variables as `share_vars_from`: it sees the trained parameters. The two must
  /// not run at the same time.
  parallel_executor(const proto::ProgramDesc& main, const parallel_executor& share_vars_from,
                    build_strategy build = {});

  ~parallel_executor();
  parallel_executor(const parallel_executor&) = delete;
  parallel_executor& operator=(const parallel_executor&) = delete;

  /// Runs one step and returns each fetched variable merged across places:
  /// - a variable whose declared dims have no batch dimension (-1) and one element (a mean
  ///   loss, an accuracy) becomes sum_p (rows_p / batch) * value_p over places with rows:
  ///   the global-batch value, not Paddle's [places] vector;
  /// - anything else is concatenated along dim 0 in place order.
  /// Throws pe::error on a bad feed, a kernel failure, or when the executor is being destroyed.
  std::vector<tensor> run(const feed_map& feeds, const std::vector<std::string>& fetch_list);

  /// Like run, without merging: result[k][p] is fetch k on place p.
  std::vector<std::vector<tensor>> run_per_place(const feed_map& feeds,
                                                 const std::vector<std::string>& fetch_list);

  int num_places() const;
  int num_threads() const;
  const scope& place_scope(int p) const;

  /// Records the firings of later steps into `recorder` (nullptr: stop recording). The
  /// recorder must outlive the steps it records; call between steps. Off, tracing costs one
  /// branch per firing.
  void trace(trace_recorder* recorder);

  /// "cpu:0", "cpu:1", ...: the places' names as traces and errors print them.
  std::vector<std::string> place_names() const;

  /// The main program this executor runs.
  const proto::ProgramDesc& program() const;

  /// The SSA graph of the last run (built for its fetch list); throws before the first run.
  const ssa_graph& graph() const;

 private:
  std::vector<tensor> merge(std::vector<std::vector<tensor>> per_place,
                            const std::vector<std::string>& fetch_list) const;

  std::shared_ptr<executor_runtime> runtime_; // places, scopes, actor system (shared)
  std::unique_ptr<executor_state> state_;     // this executor's program, graph, actors, step
};

} // namespace pe

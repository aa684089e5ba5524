#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/stall_report.hpp"
#include "devices/host_cpus.hpp"
#include "graph/exec/feed_check.hpp"
#include "graph/exec/scope.hpp"
#include "graph/proto.hpp"
#include "graph/ssa_graph.hpp"

namespace pe {

struct executor_runtime;
struct executor_state;
class process_group;
class trace_recorder;

/// How a reader on another stream waits for the work it reads (the seed's two strategies).
enum class sync_mode {
  event, ///< a stream wait: the reader's stream waits on the writer's event; the host goes on
  wait,  ///< the reader's op actor blocks on the writer's event before enqueueing its work
};

/// What the stall watch does when a step makes no progress for the stall timeout.
enum class stall_action {
  fail,   ///< tell the report's sink, then fail the step with an error naming the root cause
  report, ///< tell the report's sink and keep waiting (again after each further timeout)
};

/// The stall timeout when none is given: 300 s. Progress is any firing, any kernel,
/// transfer or stream item finishing, any rank joining a collective; a healthy step goes
/// seconds at most without one, even a large model's on a slow CPU place (one kernel is
/// the longest gap). Five minutes stays clear of the slowest kernels and of a peer process
/// that is restarting its data loading, and still ends a hung job long before anyone
/// notices it the hard way.
inline constexpr double default_stall_timeout_s = 300;

/// How the op actors are scheduled.
struct execution_strategy {
  /// Worker threads of the CAF scheduler running every op actor (at least 1). Op actors only
  /// enqueue work on the places' devices, so one worker keeps up with several places;
  /// more workers wake one another for every message.
  int num_threads = 1;
  sync_mode sync = sync_mode::event;
  /// The processes this one trains with (join_processes()), every one running the same
  /// number of places; nullptr: this process alone. Must outlive the executor.
  process_group* group = nullptr;
  /// Paddle's FLAGS_check_nan_inf: after each op's kernel, on its stream, check its FP32
  /// outputs and fail the step naming the op, place and variable that first holds NaN or
  /// an infinity. Off, nothing is checked (decided once, when the graph is built).
  bool check_nan_inf = false;
  /// A step that makes no progress for this many seconds stalls (see stall_action); 0
  /// turns the watch off. The thread that runs the step watches it between its waits: no
  /// thread of its own.
  double stall_timeout_s = default_stall_timeout_s;
  stall_action on_stall = stall_action::fail;
  /// Told every report, from the thread that runs the step: a stall's, and one asked for
  /// through `report_request`. Empty: reports go nowhere but into a stall's error.
  std::function<void(const stall_report&)> on_report = {};
  /// When set and found true during a step (looked at least once a second), it is cleared
  /// and a report of the running step goes to on_report: how SIGUSR1 asks for one (its
  /// handler sets the flag, nothing else). Must outlive the executor.
  std::atomic<bool>* report_request = nullptr;
  /// Steps as CUDA graphs (actors/captured_steps.hpp): after two eager steps of the same
  /// feed shapes a step is captured, and later steps of those shapes are replayed with one
  /// launch per step instead of one per kernel. Needs GPU places of one GPU, one process,
  /// sync_mode::event and no check_nan_inf (pe::error otherwise). A program whose launch
  /// code needs the host mid-step (dropout, control flow) cannot be captured: its steps
  /// run eagerly, with a note on stderr saying why. Traced steps run eagerly.
  bool cuda_graphs = false;
  /// Each CPU place's device thread pinned to a core of its own (devices/host_cpus.hpp):
  /// fewer migrations and no two places on one core while another idles. By default only
  /// where the places fill the cores (place_pinning::when_full): measured on the 2-vCPU
  /// EPYC, the Paddle ResNet fixture on 2 places ran its first ~100 steps up to 1.6x slower
  /// unpinned (both device threads on one core until the scheduler moved one; 300-step runs
  /// 1.29-1.99x of 1 place unpinned, 1.74-1.88x pinned), the MLP at 128 rows on 2 places
  /// +2.6% (medians of 10 interleaved 1500-step runs). Two jobs that both pin share the
  /// same cores, each place with the other job's place of its number; with places to
  /// spare neither pins by default.
  place_pinning pin_places = place_pinning::when_full;
  /// Every op handle fires by a message to its own actor. Off (the default), a node whose
  /// inputs all come from one firing group on its own place and stream is enqueued by that
  /// group's firing instead (actors/step_graph.hpp): the same work in the same stream
  /// order, a few microseconds of a CAF worker saved per node; an edge that other edges
  /// imply is dropped, a head waiting for one message is fired by its sender, and one
  /// hearing only from the step's thread is counted and fired by it. For comparing and for
  /// seeing each op's firing in a trace's message flow.
  bool actor_per_op = false;
  /// run() returns once the step's fetches and every op touching a feed have run, leaving
  /// the rest of the step (its tail: the optimizer's updates after the last feed reader,
  /// their all-reduces) running while the caller prepares and fires the next step, which
  /// its streams run behind it. Same results, bit for bit: stream order, and the next
  /// step's waits on the tail's end, keep every dependency. Whatever reads the variables
  /// (host_value, place_scope, set_persistable, another executor of these places) first
  /// waits for the tail, and a tail that fails fails the next call, or finish(). Only CPU
  /// places of one process without CUDA graphs overlap; elsewhere every run is whole.
  /// Why: between two steps the places idled while run() returned and the next one set up
  /// and fired (12 us of a 750 us MLP step on 1 place, 28 us on 2, traces).
  bool overlap_steps = true;
};

/// Paddle's ParallelExecutor with every op handle a CAF actor and every place a device.
///
/// The main program is replicated on every place (data parallelism). Each op actor fires
/// when the messages for all its input variable versions of the current step have arrived:
/// it enqueues its kernel on its place's compute stream (a collective: each place's part on
/// that place's communication stream; a fetch: on the copy stream), records its event, and
/// messages the readers of its outputs with that event. A reader on the same stream just
/// enqueues (stream order is the dependency); a reader on another stream waits on the event
/// (sync_mode). So the host runs ahead while each place's kernels run back to back. Messages
/// carry (step, event); tensors stay in the per-place scopes. Collectives go through a
/// communicator, launched by every place in one sequence.
///
/// Feeds are split along dim 0 across the global ranks as evenly as possible (the first
/// batch % ranks get one more row; a rank may get none). Places read their rows of the
/// caller's tensors in place; feeds some op updates in place are copied first, so the
/// caller's tensors are never modified. With gradient_scale::coeff_num_device the loss
/// gradient on rank r is rows_r / batch, so the summed update equals the one for the
/// global-batch mean, also for uneven splits.
///
/// A failing kernel fails its stream, which poisons every later piece of work on that
/// stream and on every stream that waits on it (collectives spread it to every place); run()
/// throws the first error with op, place and message, and the executor stays usable.
/// Temporaries are freed by the stream after the last kernel touching them has run.
/// Destroying the executor cancels a step in flight (remaining kernels are skipped), waits
/// for it, and stops every actor; the last executor of a runtime stops its streams.
class parallel_executor {
 public:
  /// Runs `startup` once on place 0 and copies every persistable variable to the other
  /// places; with a process group, the persistables of rank 0's place 0 go to every
  /// process. Throws pe::error for a program that fails validation or an unsupported place.
  parallel_executor(std::vector<place> places, const proto::ProgramDesc& startup,
                    const proto::ProgramDesc& main, build_strategy build = {},
                    execution_strategy exec = {});

  /// An executor for another program (typically the test program) over the same places,
  /// devices, threads, variables and execution strategy as `share_vars_from`: it sees the
  /// trained parameters.
  /// The two must not run at the same time.
  parallel_executor(const proto::ProgramDesc& main, const parallel_executor& share_vars_from,
                    build_strategy build = {});

  ~parallel_executor();
  parallel_executor(const parallel_executor&) = delete;
  parallel_executor& operator=(const parallel_executor&) = delete;

  /// Runs one step and returns each fetched variable merged across places (merge_fetch):
  /// a one-element loss or metric becomes the global-batch value, not Paddle's [places]
  /// vector; anything else is concatenated along dim 0 in rank order. With a process
  /// group, over the places of every process (their fetches are gathered): every process
  /// gets the same global values.
  /// Throws pe::error on a bad feed, a kernel failure, or when the executor is being destroyed.
  std::vector<tensor> run(const feed_map& feeds, const std::vector<std::string>& fetch_list);

  /// Like run, without merging: result[k][p] is fetch k on place p.
  std::vector<std::vector<tensor>> run_per_place(const feed_map& feeds,
                                                 const std::vector<std::string>& fetch_list);

  /// Like run, for one process of a job that reads only its share of each global batch:
  /// `my_rows` holds the rows of this process's global ranks (split_rows of `global_batch`
  /// over the world, in rank order), and nothing of the other processes' rows. Throws
  /// pe::error when the feeds hold another number of rows than that share.
  /// With `stop_vote`, this process's vote (a signal number, 0 for none) travels with the
  /// gathered fetches, and on return it holds the job's: the first non-zero vote in rank
  /// order, the same on every process, without a round trip of its own.
  std::vector<tensor> run_share(const feed_map& my_rows, std::int64_t global_batch,
                                const std::vector<std::string>& fetch_list, int* stop_vote = nullptr);

  /// Waits for the last step's tail where run() left it running (execution_strategy::
  /// overlap_steps) and throws its failure; returns at once when nothing runs. Call after
  /// the last step, to see that step's failure where nothing else reads the variables.
  void finish();

  /// Work for the next run (run, run_per_place, run_share) to do on its calling thread once
  /// the step's work is enqueued, before it waits for the step to end: what the caller
  /// prepares for its next step (copying the next batch) then overlaps this step's kernels
  /// instead of delaying the next step's start. Runs once, or not at all when the run fails
  /// before its step starts (a bad feed); an exception it throws is rethrown once the step
  /// ended, after the step's own failure if it had one. Call between steps.
  void run_meanwhile(std::function<void()> work);

  /// run_meanwhile's work in `pieces` independent pieces, `work(k)` for k = 0 .. pieces - 1,
  /// each run once, possibly on several threads at once. Where the CPU places take every
  /// core this process may use (counting the other processes' places where the
  /// communicator knows they share this host: the shared-memory backend's), the places' own
  /// threads run the pieces whenever their streams have nothing ready
  /// (devices/idle_work.hpp), instead of the run's thread taking a place's core at the
  /// step's start, and the run finishes what is left once the step's work is done;
  /// elsewhere the run's thread runs them all, as run_meanwhile's one piece.
  void run_meanwhile(std::function<void(int piece)> work, int pieces);

  /// The rows [first, first + count) of a global batch of `global_batch` rows that this
  /// process's places take, for the caller of run_share.
  std::pair<std::int64_t, std::int64_t> share_of(std::int64_t global_batch) const;

  /// Replaces persistable `name` (a parameter, an optimizer state) with a copy of `value` on
  /// every place: parameters are replicas. Call between steps, typically after construction to
  /// load saved parameters; executors sharing this one's variables see the new value. Read a
  /// persistable back from place 0: host_value(name, 0). Throws pe::error when `name` is
  /// not a persistable of the program or a step is running.
  void set_persistable(const std::string& name, const tensor& value);

  /// The steps already run on these parameters (a run resumed from a checkpoint of step
  /// `steps`): the next run counts as step steps + 1, so random ops (dropout) draw what the
  /// uninterrupted run would have. Call between steps.
  void set_steps_done(std::uint64_t steps);

  int num_places() const;
  int num_threads() const;
  sync_mode sync() const;
  const scope& place_scope(int p) const;
  /// Variable `name` of place p in host memory: the scope's tensor itself on a CPU place
  /// (sharing its buffer), a copy through the device on a GPU place (whose scope tensors
  /// hold device memory the host must not read). Call between steps. Throws pe::error when
  /// the place has no such variable or the copy fails.
  tensor host_value(const std::string& name, int p) const;

  /// Persistable `name` as the job holds it, in host memory, for saving it: place 0's value,
  /// except where the last run's steps updated it on other places only, which reduce mode
  /// does with the optimizer state of a parameter another place owns (its moments and beta
  /// powers change on the owner alone): then that place's. Call between steps. Throws
  /// pe::error when the step updates `name` on none of this process's places but on another
  /// process's (reduce mode across processes): this process's copy stopped changing, and
  /// saving it would silently lose the owner's state.
  tensor persistable_value(const std::string& name) const;

  /// Records the firings of later steps into `recorder` (nullptr: stop recording). The
  /// recorder must outlive the steps it records; call between steps. Off, tracing costs one
  /// branch per firing.
  void trace(trace_recorder* recorder);

  /// "cpu:0", "cpu:1", ...: the places' names as traces and errors print them.
  std::vector<std::string> place_names() const;

  /// Whether a step stalled (stall_action::fail) and its work may still be running: a
  /// kernel that never returns keeps its place's thread, so destroying the executor would
  /// wait for it. The next run waits for that work (up to the stall timeout) and then
  /// rebuilds the graph and communicator, or fails saying it is still running.
  bool stalled() const;

  /// What execution_strategy::cuda_graphs did so far: graphs made, steps replayed, graphs
  /// dropped because a variable's buffer moved, device operations in the current graph,
  /// and why graphs were turned off (empty while on). All zero without cuda_graphs.
  struct cuda_graph_counts {
    std::uint64_t captures = 0, replays = 0, dropped = 0;
    std::size_t operations = 0;
    std::string off_reason;
  };
  cuda_graph_counts cuda_graph_statistics() const;

  /// The main program this executor runs.
  const proto::ProgramDesc& program() const;

  /// The SSA graph of the last run (built for its fetch list); throws before the first run.
  const ssa_graph& graph() const;

  /// The firing groups of the current graph (execution_strategy::actor_per_op): each a head
  /// op handle's id followed by its followers' in the order its firing enqueues them; every
  /// op handle of graph() in exactly one. Throws before the first run.
  std::vector<std::vector<int>> firing_groups() const;
  /// The group heads of the current graph that the thread sending their one input message
  /// fires instead (no op actor: step_graph::fires_inline), by id. Throws before the first
  /// run.
  std::vector<int> inline_firings() const;
  /// How many op actors the current graph has (heads that fire on messages through CAF:
  /// not the sources, the inline firings or the heads the step's thread counts). Throws
  /// before the first run.
  std::size_t op_actor_count() const;

  /// For tests: the collective sequence numbers each place issued on the current graph, in
  /// the order it issued them.
  std::vector<std::vector<std::uint64_t>> collective_history() const;

 private:
  std::shared_ptr<executor_runtime> runtime_; // places, devices, scopes, actor system (shared)
  std::unique_ptr<executor_state> state_;     // this executor's program, graph, actors, step

  /// run_per_place for the global batch `global_batch` of which `feeds` holds the rows
  /// from `first` on.
  std::vector<std::vector<tensor>> run_rows(const feed_map& feeds, std::int64_t global_batch,
                                            std::int64_t first,
                                            const std::vector<std::string>& fetch_list);
  std::vector<tensor> merged(std::vector<std::vector<tensor>> per_place,
                             const std::vector<std::string>& fetch_list, int* stop_vote = nullptr);
};

} // namespace pe

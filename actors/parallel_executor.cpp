#include "actors/parallel_executor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <utility>

#include "actors/captured_steps.hpp"
#include "actors/feed_split.hpp"
#include "actors/op_actor.hpp"
#include "actors/runtime.hpp"
#include "actors/stall_watch.hpp"
#include "actors/trace.hpp"
#include "collectives/net/process_group.hpp"
#include "collectives/net/tensor_bytes.hpp"
#include "core/spin_wait.hpp"
#include "core/steady_clock.hpp"
#include "devices/host_cpus.hpp"
#include "devices/idle_work.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/program_info.hpp"
#include "graph/validate.hpp"

namespace pe {

namespace {

/// How long the thread that runs a step looks (yielding its core) for the step's end before
/// it sleeps: a training step on CPU places often lasts about a millisecond, and a thread
/// that sleeps through it pays a wake-up when it ends, which on a virtual machine's idle
/// core costs tens of microseconds, on every step, before the next step can begin. Measured
/// with bench/training_bench on the 2-vCPU EPYC (MLP, batch 64): 1 place 0.90x of the
/// reference loop with the streams' own 50 us, 0.98x with 2 ms. A longer step spins 2 ms of
/// it, then sleeps as before.
constexpr auto step_end_spin = std::chrono::milliseconds(2);

/// Spins (yielding) until `ready()` or until `deadline`; the waits that follow block.
template <class Ready>
void spin_before_waiting(std::chrono::steady_clock::time_point deadline, Ready&& ready) {
  const auto now = std::chrono::steady_clock::now();
  if (now < deadline)
    spin_until(std::chrono::duration_cast<std::chrono::microseconds>(deadline - now), std::forward<Ready>(ready));
}

/// The caller's work for its next step offered to the places' threads (idle_work) for one
/// run: finish() ends it where the step's streams are done; on any other way out of the
/// run, the destructor withdraws it and waits for the pieces in flight, whose writes the
/// caller may read once run returns.
class offered_work {
 public:
  explicit offered_work(std::vector<device*> devices) : devices_(std::move(devices)) {}
  offered_work(const offered_work&) = delete;
  offered_work& operator=(const offered_work&) = delete;
  ~offered_work() {
    try {
      finish();
    } catch (...) {
    }
  }

  void offer(std::shared_ptr<idle_work> work) {
    work_ = std::move(work);
    for (device* d : devices_) d->offer_idle_work(work_);
  }

  /// Withdraws the work, runs the pieces no place took and waits for those they run; the
  /// first exception a piece threw, or null.
  std::exception_ptr finish() {
    if (!work_) return nullptr;
    for (device* d : devices_) d->withdraw_idle_work();
    const std::shared_ptr<idle_work> work = std::move(work_);
    try {
      work->finish();
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  }

 private:
  std::vector<device*> devices_;
  std::shared_ptr<idle_work> work_;
};

/// The loss-gradient variable the Backward|Loss op seeds, or "" (inference programs).
std::string loss_gradient(const proto::ProgramDesc& main) {
  std::string loss = analyze_program(main).loss;
  return loss.empty() ? "" : grad_name(loss);
}

/// Waits for the copies on `copies`; on a failure throws `what` + its error, leaving the
/// stream usable for the next step (its error cleared).
void finish_copies(stream& copies, const std::string& what) {
  if (copies.synchronize()) return;
  const std::string why = copies.error().value_or("the copy stream stopped");
  copies.clear_error();
  throw error(what + why);
}

/// Copies each (name, value) into the scopes of places [first, last) through their devices'
/// copy streams and waits for the copies; `what` starts the error message.
void copy_to_places(executor_runtime& rt, std::size_t first,
                    const std::vector<std::pair<std::string, const tensor*>>& vars,
                    const std::string& what) {
  for (std::size_t p = first; p < rt.scopes.size(); ++p) {
    device& d = *rt.devices[p];
    stream& copies = d.get_stream(stream_kind::copy);
    for (const auto& [name, value] : vars) d.copy(copies, rt.scopes[p]->var(name), *value);
    finish_copies(copies, what + to_string(d.where()) + ": ");
  }
}

/// Rank 0's persistables (on its place 0) onto every place of this process: the job starts
/// from one set of parameters, whatever each process's startup program drew.
void receive_rank0_persistables(executor_runtime& rt,
                                const std::vector<std::pair<std::string, const tensor*>>& mine) {
  process_group& group = *rt.group;
  std::string names;
  std::vector<const tensor*> values;
  for (const auto& [name, value] : mine) {
    names += name + '\n';
    values.push_back(value);
  }
  const auto sent = group.broadcast(bytes_of(names.data(), names.size()), 0);
  if (std::string(sent.begin(), sent.end()) != names)
    throw error("process rank 0's startup program initialised other persistables than this "
                "process's");
  auto received = group.broadcast_tensors(values, 0);
  if (group.rank() == 0) return;
  std::vector<std::pair<std::string, const tensor*>> theirs;
  for (std::size_t k = 0; k < mine.size(); ++k) theirs.emplace_back(mine[k].first, &received.at(k));
  copy_to_places(rt, 0, theirs, "copying rank 0's persistables to ");
}

/// Every process's per-place fetches and rows, in global rank order: each process adds its
/// own to what the others sent. `stop_vote` (0 when not given) travels after the rows, and
/// comes back as the first non-zero vote in rank order.
void gather_fetches(process_group& group, std::vector<std::vector<tensor>>& fetched,
                    std::vector<std::int64_t>& rows, int* stop_vote,
                    const std::function<void(int, std::chrono::milliseconds)>& waiting,
                    std::chrono::milliseconds every) {
  std::vector<std::int64_t> rows_and_vote = rows;
  rows_and_vote.push_back(stop_vote != nullptr ? *stop_vote : 0);
  const tensor my_rows = tensor::from_vector(rows_and_vote, {static_cast<std::int64_t>(rows_and_vote.size())});
  std::vector<const tensor*> mine{&my_rows};
  for (const auto& per_place : fetched)
    for (const auto& t : per_place) mine.push_back(&t);
  const auto all = group.all_gather(encode_tensors(mine), waiting, every);
  std::vector<std::vector<tensor>> world(fetched.size());
  std::vector<std::int64_t> world_rows;
  std::int64_t agreed = 0;
  const std::size_t places = rows.size();
  for (std::size_t p = 0; p < all.size(); ++p) {
    const std::string source = "process rank " + std::to_string(p);
    auto theirs = decode_tensors(all[p], source);
    if (theirs.size() != 1 + fetched.size() * places || theirs[0].type() != dtype::int64 ||
        theirs[0].numel() != static_cast<std::int64_t>(places) + 1)
      throw error(source + " sent fetches for another fetch list or number of places");
    const auto their_rows = theirs[0].values<std::int64_t>();
    world_rows.insert(world_rows.end(), their_rows.begin(), their_rows.end() - 1);
    if (agreed == 0) agreed = their_rows.back();
    for (std::size_t k = 0; k < fetched.size(); ++k)
      for (std::size_t q = 0; q < places; ++q) world[k].push_back(theirs[1 + k * places + q]);
  }
  fetched = std::move(world);
  rows = std::move(world_rows);
  if (stop_vote != nullptr) *stop_vote = static_cast<int>(agreed);
}

} // namespace

namespace {

/// The stall timeout in whole milliseconds (at least 1 when on). Throws pe::error for a
/// timeout that is negative, not a number, or beyond a year (0 turns the watch off).
std::chrono::milliseconds stall_timeout_ms(double seconds) {
  if (!(seconds >= 0 && seconds <= 365.0 * 24 * 3600))
    throw error("parallel_executor: the stall timeout must be 0 (off) or positive seconds up to a year, got " +
                std::to_string(seconds));
  if (seconds == 0) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(std::max<std::int64_t>(1, std::llround(seconds * 1000)));
}

} // namespace

/// One executor's program, graph, actors and step bookkeeping. Validation runs once, here.
struct executor_state {
  /// The execution strategy's stall settings (an executor sharing variables takes them too).
  struct stall_settings {
    double timeout_s = default_stall_timeout_s;
    stall_action on_stall = stall_action::fail;
    std::function<void(const stall_report&)> on_report;
    std::atomic<bool>* report_request = nullptr;
  };

  executor_state(const proto::ProgramDesc& program, build_strategy b, sync_mode sync,
                 bool check, bool per_op, stall_settings stall_settings)
      : main(lower_for_strategy(program, b)), build(b), check_nan_inf(check), actor_per_op(per_op),
        stall(std::move(stall_settings)),
        watch(stall_timeout_ms(stall.timeout_s)),
        declared(validate_program(main, b.max_tensor_bytes)), feeds(main, declared),
        loss_grad(loss_gradient(main)) {
    for (step_inputs& f : frames) f.env = &env;
    env.in = &frames[0];
    env.sync = sync;
    env.live = watching(); // fixed for the executor's life: the settings never change
    env.all_fired = [this] {
      // Notifies under the lock: the waiting thread may destroy this state as soon as it
      // can take the lock again.
      std::lock_guard<std::mutex> guard(mutex);
      all_fired = true;
      changed.notify_all();
    };
    env.awaited_done = [this] {
      std::lock_guard<std::mutex> guard(mutex); // as all_fired
      awaited_done = true;
      changed.notify_all();
    };
  }

  proto::ProgramDesc main;
  build_strategy build;
  bool check_nan_inf; // execution_strategy::check_nan_inf
  bool actor_per_op;  // execution_strategy::actor_per_op
  stall_settings stall;
  stall_watch watch;
  var_table declared;
  feed_check feeds;
  std::string loss_grad;

  std::unique_ptr<step_graph> graph;
  std::unique_ptr<communicator> comm; // of the current graph
  std::vector<std::string> fetch_list;
  std::uint64_t graph_steps = 0;              // steps run on the current graph
  /// The inputs of step s are frames[s % 2] (see step_inputs): one step's tail may still
  /// run on them while the next step starts.
  std::array<step_inputs, 2> frames;
  actor_env env;
  /// Per frame, per place, per stream kind: recorded on that stream once every node of the
  /// frame's last step had fired (overlap_steps), so that the next step's work on the
  /// place's other streams waits for the step's end there.
  std::array<std::vector<std::array<std::unique_ptr<event>, 3>>, 2> ends;
  /// The step whose tail may still be running (overlap_steps): run() returned once its
  /// awaited nodes were done; 0 when none.
  std::uint64_t tail_step = 0;
  /// execution_strategy::overlap_steps where this executor can: CPU places of one process,
  /// no CUDA graphs. The graph decides the rest (step_graph::overlappable, env.overlap).
  bool overlap_allowed = false;

  step_inputs& in() { return frames[step % 2]; }
  std::vector<std::int64_t> rows; // of the last run, per place
  /// GPU places: the feed rows being copied over this step (a deque: the copies hold
  /// references), and the event after each place's copies that its other streams wait on.
  std::deque<tensor> feed_rows;
  std::vector<std::unique_ptr<event>> feeds_ready;
  /// run_meanwhile's work for the next run, in pieces (none: no work).
  std::function<void(int)> meanwhile;
  int meanwhile_pieces = 0;
  /// Whether the CPU places' device threads run the meanwhile pieces in their idle moments
  /// (devices/idle_work.hpp) rather than the thread that runs the step: where every place
  /// is a CPU place and they (with the other processes' on this host, where the communicator
  /// knows them) are at least as many as the CPUs this process may use, so that the step's
  /// thread would take a place's core.
  bool meanwhile_on_places = false;
  std::uint64_t step = 0;
  std::int64_t step_start_ns = 0;
  /// Set when a step failed for a stall: its work may still run; the next run waits for it
  /// and rebuilds the graph. Read and written by the thread that runs steps.
  std::atomic<bool> stalled{false};
  std::string stall_error;
  /// execution_strategy::cuda_graphs: null when off.
  std::unique_ptr<captured_steps> captured;
  /// Steps fired twice: a capture that failed (nothing of it ran) and the eager rerun. The
  /// op actors need a new step number for the rerun's messages; random ops must draw what
  /// the step would have drawn, so they are told the steps before it without the reruns.
  std::uint64_t reruns = 0;

  std::mutex mutex;
  std::condition_variable changed;
  /// Set under `mutex` (the waits on `changed` read it there); atomic for the thread that
  /// looks for it, yielding, without the lock (run_rows).
  std::atomic<bool> all_fired{true};
  /// Set when the current step's awaited nodes have all run (under `mutex`, as all_fired).
  std::atomic<bool> awaited_done{true};
  /// Whether the thread that runs a step looks for its last firing, yielding, before it
  /// sleeps (run_rows): where no op actor fires (no CAF worker would lose a core to it) and
  /// a core is left over (a process alone, fewer places than the CPUs it may use).
  bool spin_for_firings = false;
  int active_runs = 0;
  bool closing = false;

  /// Whether the thread that runs a step looks at it between bounded waits (a stall watch or
  /// on-demand reports), or just blocks.
  bool watching() const { return watch.on() || stall.report_request != nullptr; }

  void stop_actors() {
    for (auto& a : env.actors)
      if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    env.actors.clear();
  }
};

namespace {

/// The step's progress as one number that changes whenever anything moves: the actors yet
/// to fire, each node's work starting, finishing or failing (node_live), every stream's
/// enqueued and finished items, and the ranks that joined or finished each collective under
/// way. Mixed, not summed: a collective that completes drops out of the communicator's
/// status while counts elsewhere grow. Read at a tick only (at most once a second), so
/// the hot path keeps no shared counter: each node writes its own cache line.
std::uint64_t progress_fingerprint(const executor_state& st, const executor_runtime& rt) {
  std::uint64_t f = static_cast<std::uint64_t>(st.env.remaining.load(std::memory_order_relaxed));
  auto mix = [&f](std::uint64_t x) { f = f * 1000003u + x; };
  if (st.graph)
    for (std::size_t id = 0; id < st.graph->nodes().size(); ++id) {
      const node_live& l = st.graph->live(static_cast<int>(id));
      mix(l.started.load(std::memory_order_relaxed));
      mix(l.finished.load(std::memory_order_relaxed));
      mix(l.failed.load(std::memory_order_relaxed));
    }
  for (const auto& d : rt.devices)
    for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy}) {
      const auto counts = d->get_stream(kind).counts();
      mix(counts.enqueued);
      mix(counts.completed);
    }
  if (st.comm)
    if (auto status = st.comm->status())
      for (const collective_status& c : status->pending) {
        mix(c.sequence);
        mix(c.joined.size());
        mix(c.finished.size());
      }
  return f;
}

/// A report of the running step, made now.
stall_report report_now(executor_state& st, executor_runtime& rt, bool on_demand) {
  stall_view v;
  v.graph = st.graph.get();
  v.devices = rt.device_list();
  for (const place& p : rt.ranks.local_places) v.place_names.push_back(to_string(p));
  v.comm = st.comm.get();
  v.step = st.step;
  v.sequence_base = st.env.sequence_base;
  v.step_start_ns = st.step_start_ns;
  v.now_ns = steady_ns();
  v.idle_s = st.watch.idle_s(v.now_ns);
  v.on_demand = on_demand;
  v.first_error = st.in().first_error();
  v.process_rank = rt.ranks.process_rank;
  v.num_processes = rt.ranks.num_processes;
  return make_stall_report(v);
}

/// A report of the running step to on_report when one was asked for (the flag is taken).
void answer_report_request(executor_state& st, executor_runtime& rt) {
  if (st.stall.report_request != nullptr && st.stall.report_request->exchange(false) && st.stall.on_report)
    st.stall.on_report(report_now(st, rt, true));
}

/// The error of a step that failed for a stall: the root cause and where the chain starts;
/// the report has the rest.
std::string stall_failure(const stall_report& r) {
  char idle[32];
  std::snprintf(idle, sizeof idle, "%.1f", r.idle_s);
  std::string e = "step " + std::to_string(r.step) + " stalled: no progress for " + idle + " s; root cause: " + r.root_cause;
  if (r.chain.size() > 1)
    e += " (the chain starts at: " + r.chain.front() + (r.chain.size() > 2 ? "; ..." : "") + ")";
  return e;
}

/// One look of the thread that waits for a step, between two bounded waits: a report when
/// one was asked for, and the stall watch. True when the step stalled and fails now (its
/// error is st.stall_error; the communicator is aborted, so ranks parked in a collective
/// fail and their streams drain).
bool look_at_step(executor_state& st, executor_runtime& rt) {
  answer_report_request(st, rt);
  const std::int64_t now = steady_ns();
  if (!st.watch.stalled(progress_fingerprint(st, rt), now)) return false;
  const stall_report r = report_now(st, rt, false);
  if (st.stall.on_report) st.stall.on_report(r);
  if (st.stall.on_stall == stall_action::report) {
    st.watch.rearm(now);
    return false;
  }
  st.stall_error = stall_failure(r);
  st.in().fail(st.stall_error);
  st.stalled = true;
  if (st.comm) st.comm->abort();
  return true;
}

/// The stall watch over what follows a step across processes: the gather of every process's
/// fetched values (a host exchange, after the step's own watch ended). Each stall timeout a
/// process's part is still missing, a report naming that process; with --on-stall fail the
/// step then fails. Null when the watch is off.
std::function<void(int, std::chrono::milliseconds)> watch_fetch_gather(executor_state& st, const executor_runtime& rt) {
  if (!st.watch.on()) return nullptr;
  return [&st, &rt](int missing, std::chrono::milliseconds waited) {
    stall_view v;
    v.step = st.step;
    v.step_start_ns = st.step_start_ns;
    v.now_ns = steady_ns();
    v.idle_s = std::chrono::duration<double>(waited).count();
    v.process_rank = rt.ranks.process_rank;
    v.num_processes = rt.ranks.num_processes;
    const stall_report r = make_after_step_report(
        v, "every op of the step finished on this process; it gathers every process's fetched values",
        "step " + std::to_string(st.step) + "'s gather of fetched values (a host exchange after the step) "
        "waits for process rank " + std::to_string(missing) + " (stopped, slow, or stuck before the gather)");
    if (st.stall.on_report) st.stall.on_report(r);
    if (st.stall.on_stall == stall_action::fail) throw error(stall_failure(r));
  };
}

/// A place's streams, in the order the waits for a step's end go through them (the first
/// failure found is the one reported).
constexpr std::array<stream_kind, 3> all_stream_kinds = {stream_kind::communication, stream_kind::compute,
                                                         stream_kind::copy};

/// The index of `kind` in executor_state::ends' arrays.
std::size_t kind_index(stream_kind kind) {
  return static_cast<std::size_t>(kind);
}

/// After waiting for stream `s` of `d` (`finished_ok`: what its synchronize said): where its
/// work failed or it was stopped, the message, with place and stream, goes to `cause`, or to
/// `consequence` where the stream only waited on another stream's failure (its error kind
/// says); the first of each is kept. The stream's error is cleared.
void note_stream_failure(device& d, stream_kind kind, stream& s, bool finished_ok,
                         std::optional<std::string>& cause, std::optional<std::string>& consequence) {
  if (!finished_ok) {
    const std::string what = s.error().value_or("the stream was stopped") + " (" + to_string(d.where()) + " " +
                             to_string(kind) + " stream)";
    auto& slot = s.error_kind() == error_kind::consequence ? consequence : cause;
    if (!slot) slot = what;
  }
  s.clear_error();
}

/// Waits for the tail of the step that run() left running (overlap_steps), on every stream
/// of the places, and returns its first failure: a kernel's error, a stream's own (before
/// the failures it caused), the communicator's; nullopt when it ran. Watched, a tail that
/// does not end within the stall timeout fails (the communicator is aborted so that it
/// drains). Afterwards no step's work is in flight.
std::optional<std::string> finish_tail(executor_state& st, executor_runtime& rt) {
  if (st.tail_step == 0) return std::nullopt;
  const std::uint64_t tail = std::exchange(st.tail_step, 0);
  if (rt.unfinished == &st) rt.unfinished = nullptr;
  std::optional<std::string> cause, consequence;
  for (device* d : rt.device_list())
    for (stream_kind kind : all_stream_kinds) {
      stream& s = d->get_stream(kind);
      std::optional<bool> finished_ok;
      if (st.watch.on()) finished_ok = s.synchronize_for(st.watch.timeout());
      if (st.watch.on() && !finished_ok) {
        if (!cause)
          cause = "step " + std::to_string(tail) + "'s remaining work (after its fetches) did not end within the "
                  "stall timeout (" + std::to_string(st.watch.timeout().count()) + " ms) on " +
                  to_string(d->where()) + "'s " + to_string(kind) + " stream";
        if (st.comm) st.comm->abort(); // a rank parked in a collective fails, its stream drains
      }
      if (!finished_ok) finished_ok = s.synchronize();
      note_stream_failure(*d, kind, s, *finished_ok, cause, consequence);
    }
  std::optional<std::string> failed = st.frames[tail % 2].first_error();
  if (!failed) failed = cause;
  if (!failed) failed = consequence;
  if (!failed && st.comm) failed = st.comm->failure();
  return failed;
}

/// Once every node of `step` has fired (overlap_steps): records on each stream of each place
/// the step's end there (executor_state::ends).
void record_step_ends(executor_state& st, executor_runtime& rt, std::uint64_t step) {
  auto& ends = st.ends[step % 2];
  ends.resize(rt.devices.size());
  for (std::size_t p = 0; p < rt.devices.size(); ++p)
    for (stream_kind kind : all_stream_kinds) {
      std::unique_ptr<event>& e = ends[p][kind_index(kind)];
      if (!e) e = rt.devices[p]->make_event();
      rt.devices[p]->get_stream(kind).record(*e);
    }
}

/// Before the first firing of a step while the last step's tail may run: each stream of a
/// place waits for the tail's end on the place's other streams and on every place's
/// communication stream (a collective's completion releases every place's variables).
/// Ends already reached without a failure are skipped: most are, by the time the next step
/// fires, and a CPU stream's wait is an item its thread must go through.
void order_after_tail(executor_state& st, executor_runtime& rt) {
  const auto& ends = st.ends[st.tail_step % 2];
  const auto pending = [&](std::size_t place, stream_kind kind) -> const event* {
    const event* e = ends[place][kind_index(kind)].get();
    return e != nullptr && !(e->query() && e->synchronize()) ? e : nullptr;
  };
  for (std::size_t p = 0; p < rt.devices.size(); ++p)
    for (stream_kind kind : all_stream_kinds) {
      stream& s = rt.devices[p]->get_stream(kind);
      for (stream_kind other : all_stream_kinds)
        if (other != kind)
          if (const event* e = pending(p, other)) s.wait(*e);
      for (std::size_t q = 0; q < rt.devices.size(); ++q)
        if (q != p)
          if (const event* e = pending(q, stream_kind::communication)) s.wait(*e);
    }
}

/// Waits until the current step's awaited nodes have all run (yielding until `spin_until`,
/// then blocking; watched, in bounded waits that look at the step). False when the step
/// stalled (look_at_step).
bool wait_for_awaited(executor_state& st, executor_runtime& rt, std::chrono::steady_clock::time_point spin_until) {
  const auto done = [&st] { return st.awaited_done.load(); };
  spin_before_waiting(spin_until, done);
  std::unique_lock<std::mutex> lock(st.mutex);
  if (!st.watching()) {
    st.changed.wait(lock, done);
    return true;
  }
  while (!st.changed.wait_for(lock, st.watch.tick(), done)) {
    lock.unlock();
    if (look_at_step(st, rt)) return false;
    lock.lock();
  }
  return true;
}

/// Whether anything failed so far in the step of `in` or in the tail before it (`tail`, 0
/// for none): a kernel's error, a stream's, the communicator's. Then the step is waited for
/// whole, and its failure reported.
bool failed_so_far(executor_state& st, executor_runtime& rt, step_inputs& in, std::uint64_t tail) {
  if (in.first_error() || (tail != 0 && st.frames[tail % 2].first_error())) return true;
  for (const auto& d : rt.devices)
    for (stream_kind kind : all_stream_kinds)
      if (d->get_stream(kind).error()) return true;
  return st.comm && st.comm->failure();
}

/// finish_tail(), throwing the tail's failure.
void finish_tail_or_throw(executor_state& st, executor_runtime& rt) {
  if (auto failed = finish_tail(st, rt))
    throw error("the last step's remaining work (after its fetches) failed: " + *failed);
}

/// Finishes the tail another executor of these places left running (the training
/// executor's, before the test program's executor runs or anything reads the variables);
/// throws its failure.
void finish_tails_of(executor_runtime& rt, const executor_state* except = nullptr) {
  if (rt.unfinished != nullptr && rt.unfinished != except) finish_tail_or_throw(*rt.unfinished, rt);
}

/// Before the step after a stall: waits (bounded) for the stalled step's actors and streams,
/// then drops its graph and aborted communicator so that the step rebuilds them. Throws
/// when that work is still running.
void recover_after_stall(executor_state& st, executor_runtime& rt) {
  const auto limit = std::chrono::milliseconds(
      std::max<std::int64_t>(1000, static_cast<std::int64_t>(st.stall.timeout_s * 1000)));
  const std::string still = "step " + std::to_string(st.step) +
                            " stalled and its work is still running; this executor cannot run another step (" +
                            st.stall_error + ")";
  {
    std::unique_lock<std::mutex> lock(st.mutex);
    if (!st.changed.wait_for(lock, limit, [&st] { return st.all_fired.load(); })) throw error(still);
  }
  for (device* d : rt.device_list())
    for (stream_kind kind : all_stream_kinds)
      if (!d->get_stream(kind).synchronize_for(limit)) throw error(still);
  for (device* d : rt.device_list())
    for (stream_kind kind : all_stream_kinds)
      d->get_stream(kind).clear_error();
  st.tail_step = 0;
  if (rt.unfinished == &st) rt.unfinished = nullptr;
  st.stop_actors();
  st.graph.reset();
  st.comm.reset();
  st.stalled = false;
}

} // namespace

parallel_executor::parallel_executor(std::vector<place> places, const proto::ProgramDesc& startup,
                                     const proto::ProgramDesc& main, build_strategy build,
                                     execution_strategy exec)
    : runtime_(std::make_shared<executor_runtime>(std::move(places), exec.num_threads, exec.group,
                                                  exec.pin_places)),
      state_(std::make_unique<executor_state>(
          main, build, exec.sync, exec.check_nan_inf, exec.actor_per_op,
          executor_state::stall_settings{exec.stall_timeout_s, exec.on_stall, exec.on_report, exec.report_request})) {
  const auto& mine = runtime_->ranks.local_places;
  state_->overlap_allowed =
      exec.overlap_steps && runtime_->group == nullptr && !exec.cuda_graphs &&
      std::all_of(mine.begin(), mine.end(), [](const place& p) { return p.type == place::kind::cpu; });
  // The startup program runs on the host: in place 0's scope when that is a CPU place, else
  // in a staging scope whose values every place then copies (a GPU place's memory is the
  // device's). The other places get them through their devices' copy streams.
  const bool host_first = runtime_->ranks.local_places.front().type == place::kind::cpu;
  scope staging;
  scope& first = host_first ? *runtime_->scopes[0] : staging;
  reference_executor(startup, first, place::cpu(), build.max_tensor_bytes).run({}, {});
  std::vector<std::pair<std::string, const tensor*>> persistables;
  for (const auto& v : state_->main.blocks(0).vars())
    if (v.persistable())
      if (const tensor* t = first.find(v.name()); t != nullptr && t->initialized())
        persistables.emplace_back(v.name(), t);
  copy_to_places(*runtime_, host_first ? 1 : 0, persistables, "copying the startup program's variables to ");
  if (runtime_->group != nullptr) receive_rank0_persistables(*runtime_, persistables);
  if (exec.cuda_graphs) {
    std::string why_not;
    if (runtime_->group != nullptr) why_not = "the places span several processes";
    else if (exec.sync != sync_mode::event) why_not = "--sync wait makes the host wait between kernels";
    else if (exec.check_nan_inf) why_not = "--check-nan-inf is on";
    else state_->captured = captured_steps::make(runtime_->device_list(), why_not);
    if (!state_->captured) throw error("CUDA graphs (--cuda-graphs) cannot run here: " + why_not);
  }
}

void parallel_executor::set_persistable(const std::string& name, const tensor& value) {
  const auto& vars = state_->main.blocks(0).vars();
  if (std::none_of(vars.begin(), vars.end(),
                   [&name](const auto& v) { return v.persistable() && v.name() == name; }))
    throw error("parallel_executor::set_persistable: '" + name +
                "' is not a persistable variable of the program");
  if (!value.initialized())
    throw error("parallel_executor::set_persistable: the value given for '" + name + "' holds no data");
  finish_tails_of(*runtime_);
  std::lock_guard<std::mutex> guard(state_->mutex);
  if (state_->active_runs > 0) throw error("parallel_executor::set_persistable: a step is running");
  copy_to_places(*runtime_, 0, {{name, &value}}, "copying '" + name + "' to ");
}

void parallel_executor::set_steps_done(std::uint64_t steps) {
  finish_tails_of(*runtime_); // its work counts its steps from the old number
  std::lock_guard<std::mutex> guard(state_->mutex);
  if (state_->active_runs > 0) throw error("parallel_executor::set_steps_done: a step is running");
  state_->step = steps;
  state_->reruns = 0;
}

parallel_executor::parallel_executor(const proto::ProgramDesc& main,
                                     const parallel_executor& share_vars_from,
                                     build_strategy build)
    : runtime_(share_vars_from.runtime_),
      state_(std::make_unique<executor_state>(main, build, share_vars_from.sync(),
                                              share_vars_from.state_->check_nan_inf,
                                              share_vars_from.state_->actor_per_op,
                                              share_vars_from.state_->stall)) {
  std::string why_not;
  if (share_vars_from.state_->captured) state_->captured = captured_steps::make(runtime_->device_list(), why_not);
  state_->overlap_allowed = share_vars_from.state_->overlap_allowed;
}

parallel_executor::~parallel_executor() {
  bool running;
  {
    std::lock_guard<std::mutex> guard(state_->mutex);
    running = state_->active_runs > 0;
  }
  // A tail left running (overlap_steps) belongs to a step whose run returned: it ends, not
  // cancelled, so that the variables hold that step's updates.
  if (!running)
    if (auto failed = finish_tail(*state_, *runtime_))
      std::fprintf(stderr, "pe-actor: the last step's remaining work (after its fetches) failed: %s\n",
                   failed->c_str());
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->closing = true;
    // Before the abort, so that a step in flight reports why it stopped.
    for (step_inputs& f : state_->frames) {
      f.cancelled = true;
      f.fail("the step was cancelled: the executor is being destroyed");
    }
    if (state_->comm) state_->comm->abort();
    state_->changed.wait(lock, [this] { return state_->active_runs == 0; });
  }
  // A step that stalled and failed returned with its work still running: kernels on the
  // streams whose completions read this executor's graph, and actors still firing toward
  // them. They must end before the graph goes. The actors get a bounded wait (the aborted
  // communicator and the failed step make them fire at once); the streams are waited for
  // until their work ends, since freeing what a running kernel uses is the alternative.
  if (state_->stalled) {
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      state_->changed.wait_for(lock, stall_timeout_ms(std::max(1.0, state_->stall.timeout_s)),
                               [this] { return state_->all_fired.load(); });
    }
    for (device* d : runtime_->device_list())
      for (stream_kind kind : all_stream_kinds)
        d->get_stream(kind).synchronize();
  }
  if (runtime_->unfinished == state_.get()) runtime_->unfinished = nullptr;
  state_->stop_actors();
}

void parallel_executor::finish() {
  finish_tails_of(*runtime_);
}

int parallel_executor::num_places() const {
  return runtime_->ranks.local_size();
}

int parallel_executor::num_threads() const {
  return runtime_->num_threads;
}

sync_mode parallel_executor::sync() const {
  return state_->env.sync;
}

const scope& parallel_executor::place_scope(int p) const {
  finish_tails_of(*runtime_); // the variables as the last step left them
  return *runtime_->scopes.at(static_cast<std::size_t>(p));
}

tensor parallel_executor::host_value(const std::string& name, int p) const {
  const tensor& value = place_scope(p).get(name);
  device& d = *runtime_->devices.at(static_cast<std::size_t>(p));
  if (d.where().type == place::kind::cpu) return value;
  tensor host; // uninitialised: the copy brings the value to the host
  stream& copies = d.get_stream(stream_kind::copy);
  d.copy(copies, host, value);
  finish_copies(copies, "reading '" + name + "' from " + to_string(d.where()) + ": ");
  return host;
}

tensor parallel_executor::persistable_value(const std::string& name) const {
  if (!state_->graph) return host_value(name, 0); // no step has run: as loaded or initialised
  int updated_on = -1;
  for (const var_handle& v : graph().vars) {
    if (v.name != name || v.generated_op < 0) continue;
    if (v.place == 0) return host_value(name, 0);
    if (updated_on < 0 || v.place < updated_on) updated_on = v.place;
  }
  if (updated_on >= 0) return host_value(name, updated_on);
  if (runtime_->group != nullptr)
    for (const auto& op : state_->main.blocks(0).ops())
      for (const auto& out : op.outputs())
        for (const auto& arg : out.arguments())
          if (arg == name)
            throw error("'" + name + "' is updated on another process's place (its " + op.type() +
                        " op runs where its parameter's owner is, in reduce mode): this process's copy is "
                        "stale and cannot be saved; train a job whose state is saved in all-reduce mode, "
                        "or in one process");
  return host_value(name, 0);
}

void parallel_executor::trace(trace_recorder* recorder) {
  finish_tails_of(*runtime_); // its spans go to the recorder it was fired with
  std::lock_guard<std::mutex> guard(state_->mutex);
  if (state_->active_runs > 0) throw error("parallel_executor::trace: a step is running");
  state_->env.trace = recorder;
}

std::vector<std::string> parallel_executor::place_names() const {
  std::vector<std::string> names;
  for (const auto& p : runtime_->ranks.local_places) names.push_back(to_string(p));
  return names;
}

bool parallel_executor::stalled() const {
  return state_->stalled.load();
}

const proto::ProgramDesc& parallel_executor::program() const {
  return state_->main;
}

const ssa_graph& parallel_executor::graph() const {
  if (!state_->graph) throw error("parallel_executor: no graph before the first run");
  return state_->graph->graph();
}

std::vector<std::vector<int>> parallel_executor::firing_groups() const {
  if (!state_->graph) throw error("parallel_executor: no graph before the first run");
  std::vector<std::vector<int>> groups;
  for (const step_node& n : state_->graph->nodes()) {
    if (n.head != n.id) continue;
    groups.push_back({n.id});
    groups.back().insert(groups.back().end(), n.followers.begin(), n.followers.end());
  }
  return groups;
}

std::vector<int> parallel_executor::inline_firings() const {
  if (!state_->graph) throw error("parallel_executor: no graph before the first run");
  std::vector<int> heads;
  for (const step_node& n : state_->graph->nodes())
    if (state_->graph->fires_inline(n.id)) heads.push_back(n.id);
  return heads;
}

std::size_t parallel_executor::op_actor_count() const {
  if (!state_->graph) throw error("parallel_executor: no graph before the first run");
  std::size_t actors = 0;
  for (const step_node& n : state_->graph->nodes())
    if (state_->graph->has_actor(n.id)) ++actors;
  return actors;
}

parallel_executor::cuda_graph_counts parallel_executor::cuda_graph_statistics() const {
  cuda_graph_counts out;
  if (!state_->captured) return out;
  const captured_steps::counts c = state_->captured->statistics();
  out.captures = c.captures;
  out.replays = c.replays;
  out.dropped = c.dropped;
  out.operations = c.operations;
  out.off_reason = state_->captured->off_reason();
  return out;
}

std::vector<std::vector<std::uint64_t>> parallel_executor::collective_history() const {
  finish_tails_of(*runtime_);
  return state_->comm ? state_->comm->history() : std::vector<std::vector<std::uint64_t>>{};
}

std::vector<tensor> parallel_executor::run(const feed_map& feeds,
                                           const std::vector<std::string>& fetch_list) {
  return merged(run_per_place(feeds, fetch_list), fetch_list);
}

std::vector<tensor> parallel_executor::run_share(const feed_map& my_rows, std::int64_t global_batch,
                                                 const std::vector<std::string>& fetch_list, int* stop_vote) {
  const auto [first, count] = share_of(global_batch);
  if (batch_size(my_rows) != count)
    throw error("run_share: the feeds hold " + std::to_string(batch_size(my_rows)) +
                " rows; this process's share of a global batch of " + std::to_string(global_batch) +
                " is " + std::to_string(count));
  return merged(run_rows(my_rows, global_batch, first, fetch_list), fetch_list, stop_vote);
}

std::pair<std::int64_t, std::int64_t> parallel_executor::share_of(std::int64_t global_batch) const {
  const rank_model& ranks = runtime_->ranks;
  const auto all_rows = split_rows(global_batch, ranks.world_size());
  std::int64_t first = 0, count = 0;
  for (int r = 0; r < ranks.global_rank(0) + ranks.local_size(); ++r)
    (r < ranks.global_rank(0) ? first : count) += all_rows[static_cast<std::size_t>(r)];
  return {first, count};
}

std::vector<tensor> parallel_executor::merged(std::vector<std::vector<tensor>> per_place,
                                              const std::vector<std::string>& fetch_list, int* stop_vote) {
  std::vector<std::int64_t> rows = state_->rows;
  if (runtime_->group != nullptr)
    gather_fetches(*runtime_->group, per_place, rows, stop_vote, watch_fetch_gather(*state_, *runtime_),
                   stall_timeout_ms(state_->stall.timeout_s));
  std::vector<tensor> out;
  for (std::size_t k = 0; k < per_place.size(); ++k)
    out.push_back(merge_fetch(per_place[k], fetch_list[k], state_->declared.at(fetch_list[k]).dims,
                              rows));
  return out;
}

std::vector<std::vector<tensor>> parallel_executor::run_per_place(
    const feed_map& feeds, const std::vector<std::string>& fetch_list) {
  return run_rows(feeds, -1, 0, fetch_list);
}

std::vector<std::vector<tensor>> parallel_executor::run_rows(
    const feed_map& feeds, std::int64_t global_batch, std::int64_t first,
    const std::vector<std::string>& fetch_list) {
  executor_state& st = *state_;
  executor_runtime& rt = *runtime_;
  {
    std::lock_guard<std::mutex> guard(st.mutex);
    if (st.closing) throw error("parallel_executor: the executor is being destroyed");
    ++st.active_runs;
  }
  struct run_guard {
    executor_state& st;
    ~run_guard() {
      std::lock_guard<std::mutex> guard(st.mutex);
      --st.active_runs;
      st.changed.notify_all();
    }
  } guard{st};
  // Taken now: a run that fails before its step starts drops it.
  const std::function<void(int)> meanwhile = std::exchange(st.meanwhile, nullptr);
  const int meanwhile_pieces = std::exchange(st.meanwhile_pieces, 0);
  if (st.stalled) recover_after_stall(st, rt);
  finish_tails_of(rt, &st); // another executor's (the training one's, before a test step)

  // Feeds: the user's loss gradient (customized scale) goes to every place; everything
  // else is checked against the program and split along dim 0 over the global ranks.
  const bool customized = st.build.scale == build_strategy::gradient_scale::customized;
  feed_map data = feeds;
  tensor loss_grad;
  if (customized && !st.loss_grad.empty()) {
    auto it = data.find(st.loss_grad);
    if (it == data.end())
      throw error("missing feed '" + st.loss_grad + "' (gradient_scale is customized)");
    loss_grad = it->second;
    data.erase(it);
  }
  st.feeds.check(data);
  const rank_model& ranks = rt.ranks;
  if (global_batch < 0) global_batch = batch_size(data); // the feeds are the whole batch
  const std::vector<std::int64_t> all_rows = split_rows(global_batch, ranks.world_size());
  st.rows.assign(all_rows.begin() + ranks.global_rank(0),
                 all_rows.begin() + ranks.global_rank(0) + ranks.local_size());

  if (!st.graph || st.fetch_list != fetch_list) {
    // A new fetch list means new fetch ops: rebuild the graph, its actors and communicator,
    // once the old graph's work has ended.
    finish_tail_or_throw(st, rt);
    st.stop_actors();
    build_strategy build = st.build;
    build.num_trainers = ranks.num_processes;
    build.trainer_id = ranks.process_rank;
    st.graph = std::make_unique<step_graph>(
        st.main, build_ssa_graph(st.main, st.declared, ranks.local_size(), build, fetch_list),
        rt.scope_list(), rt.device_list(), st.check_nan_inf, st.actor_per_op);
    st.comm = rt.make_communicator();
    st.fetch_list = fetch_list;
    if (st.captured) st.captured->drop(); // its launches belong to the old graph
    st.graph_steps = 0;
    st.env.graph = st.graph.get();
    st.env.comm = st.comm.get();
    st.env.devices = rt.device_list();
    for (const auto& n : st.graph->nodes())
      st.env.actors.push_back(st.graph->has_actor(n.id) ? rt.system->spawn(op_actor, &st.env, n.id) : caf::actor());
    st.spin_for_firings =
        op_actor_count() == 0 && rt.group == nullptr && rt.device_list().size() <= allowed_cpus().size();
    // The job's places on this host, where the communicator knows (shared memory: every
    // process's); else this process's. Two processes of one place each on 2 cores took
    // the copy onto the step's thread, which then shared a core with a place: ~1% of the
    // MLP's step there (traces, steps alternating both ways within each run).
    const auto& devices = rt.device_list();
    const std::size_t places_here =
        static_cast<std::size_t>(st.comm->ranks_on_this_host().value_or(static_cast<int>(devices.size())));
    st.meanwhile_on_places =
        places_here >= allowed_cpus().size() &&
        std::all_of(devices.begin(), devices.end(), [](device* d) { return d->where().type == place::kind::cpu; });
    rt.places_on_this_host(places_here);
  }

  // This process's rows start after those of the ranks before its first one; `feeds`
  // starts at the global batch's row `first`.
  std::int64_t offset = -first, mine = 0;
  for (int r = 0; r < ranks.global_rank(0); ++r) offset += all_rows[static_cast<std::size_t>(r)];
  for (std::int64_t n : st.rows) mine += n;
  if (offset < 0 || offset + mine > batch_size(data))
    throw error("the feeds hold " + std::to_string(batch_size(data)) + " rows from row " +
                std::to_string(first) + " of a global batch of " + std::to_string(global_batch) +
                "; this process's places take rows " + std::to_string(offset + first) + " to " +
                std::to_string(offset + first + mine - 1));
  // CUDA graphs: decided before the feeds are copied (a replay checks the variables'
  // buffers, which the copies' launch code could otherwise be resizing).
  captured_steps::mode mode = captured_steps::mode::eager;
  if (st.captured) {
    std::string signature = std::to_string(global_batch) + "|" + std::to_string(offset) + "|";
    for (std::int64_t n : st.rows) signature += std::to_string(n) + ",";
    for (const std::string& f : fetch_list) signature += "|" + f;
    for (const auto& [name, value] : data)
      signature += "|" + name + ":" + to_string(value.type()) + ":" + joined_dims(value.shape());
    if (loss_grad.initialized()) signature += "|" + st.loss_grad + ":" + joined_dims(loss_grad.shape());
    const bool traced = st.env.trace != nullptr && st.env.trace->wants(st.step + 1);
    mode = st.captured->next(signature, traced);
  }
  const bool replaying = mode == captured_steps::mode::replay;
  const bool capturing = mode == captured_steps::mode::capture;

  st.feed_rows.clear(); // the last step's copies have run: run() waited for them
  for (std::size_t p = 0; p < st.rows.size(); ++p) {
    scope& s = *rt.scopes[p];
    const std::int64_t n = st.rows[p];
    device& d = *rt.devices[p];
    if (d.where().type == place::kind::cpu) {
      // The host's memory: a place reads its rows where they are.
      for (const auto& [name, value] : data) {
        tensor rows = value.slice(offset, offset + n);
        s.var(name) = st.feeds.written(name) ? rows.clone() : rows;
      }
      if (loss_grad.initialized()) s.var(st.loss_grad) = loss_grad.clone();
    } else {
      // A GPU place: its rows go over on its copy stream (`data` and `loss_grad` outlive
      // the step), and its compute and communication streams wait for them there, not here.
      stream& copies = d.get_stream(stream_kind::copy);
      // A step being captured notes the buffers its feeds landed in; a replay copies its
      // feeds into those (the graph reads them there), not into the scope's variables.
      auto feed = [&](const std::string& name, const tensor& value) {
        if (replaying) {
          d.copy(copies, st.captured->feed_target(p, name), value);
          return;
        }
        d.copy(copies, s.var(name), value);
        if (capturing) st.captured->note_feed(p, name, s.var(name));
      };
      for (const auto& [name, value] : data) {
        st.feed_rows.push_back(value.slice(offset, offset + n));
        feed(name, st.feed_rows.back());
      }
      if (loss_grad.initialized()) feed(st.loss_grad, loss_grad);
      if (st.feeds_ready.size() <= p) st.feeds_ready.resize(p + 1);
      if (!st.feeds_ready[p]) st.feeds_ready[p] = d.make_event();
      copies.record(*st.feeds_ready[p]);
      if (!replaying) { // a replay's graph waits for every place's feeds on its origin stream
        d.get_stream(stream_kind::compute).wait(*st.feeds_ready[p]);
        d.get_stream(stream_kind::communication).wait(*st.feeds_ready[p]);
      }
    }
    offset += n;
  }
  // This step's inputs (frames[step % 2]): the step that used them last, two back, has
  // ended everywhere (its end events; run() of the step between waited for work that
  // waited on them).
  const std::uint64_t next_step = st.step + 1;
  step_inputs& in = st.frames[next_step % 2];
  const auto& old_ends = st.ends[next_step % 2];
  const auto ended = [&old_ends] {
    return std::all_of(old_ends.begin(), old_ends.end(), [](const auto& place_ends) {
      return std::all_of(place_ends.begin(), place_ends.end(), [](const auto& e) { return !e || e->query(); });
    });
  };
  if (!ended()) {
    // Looked for first, yielding, as the step-end waits do: a host thread asleep in a CPU
    // stream's synchronize() makes every task that stream finishes wake it (a 1000-op
    // program of tiny ops ran 30% slower per step that way).
    spin_before_waiting(std::chrono::steady_clock::now() + step_end_spin, ended);
    for (const auto& place_ends : old_ends)
      for (const auto& e : place_ends)
        if (e && !e->query()) e->synchronize();
  }
  // Scaled over the global batch: rank r's share is rows_r / batch on every process.
  in.step = next_step;
  in.loss_scale = loss_scales(all_rows, st.build.scale);
  if (!in.loss_scale.empty())
    in.loss_scale = std::vector<float>(in.loss_scale.begin() + ranks.global_rank(0),
                                       in.loss_scale.begin() + ranks.global_rank(0) + ranks.local_size());
  in.capturing = capturing;
  in.reset(fetch_list.size(), st.rows.size());
  st.graph->reset_counts(in);
  in.steps_before = next_step - 1 - st.reruns;
  st.env.in = &in;
  // A replay issues no collective on the host: the communicator's sequence goes on from the
  // last step whose op actors fired.
  if (!replaying) st.env.sequence_base = st.graph_steps++ * st.graph->collectives_per_step();
  // The last step's tail may still run: this step's work on each stream of a place comes
  // after that step's work on the place's other streams and on every place's communication
  // stream (a collective's completion touches every place's variables). Stream order covers
  // the stream itself.
  const std::uint64_t tail_before = st.tail_step;
  if (tail_before != 0) order_after_tail(st, rt);

  std::unique_lock<std::mutex> lock(st.mutex);
  st.all_fired = st.graph->nodes().empty() || replaying; // a replay fires no op actor
  st.env.remaining = replaying ? 0 : static_cast<int>(st.graph->nodes().size());
  const std::uint64_t step = ++st.step;
  // A traced step runs whole: the recorder holds all of it once run returns (readers of a
  // trace look at it between steps).
  st.env.overlap = st.overlap_allowed && st.graph->overlappable() &&
                   !(st.env.trace != nullptr && st.env.trace->wants(step));
  st.awaited_done = !st.env.overlap || st.graph->awaited_count() == 0;
  const bool watching = st.watching();
  st.step_start_ns = steady_ns();
  // No fingerprint here (it reads every stream and locks the communicator): the first tick
  // sees the fingerprint move from 0 and restarts the clock, so a stall is noticed at most one
  // tick later, and a step that ends before its first tick pays nothing.
  if (watching) st.watch.start(0, st.step_start_ns);
  if (capturing) st.captured->begin_capture();
  if (replaying) {
    st.captured->replay(st.feeds_ready, in);
  } else {
    // Unlocked: the last node to fire takes the lock to say so, and a source may be last.
    lock.unlock();
    fire_sources(st.env, st.graph->sources(), step);
    lock.lock();
  }
  // The caller's work for its next step, while this one's kernels run; its failure is
  // reported after the step's own. Pieces the places' threads take (meanwhile_on_places)
  // are finished once the step's streams are done; the guard withdraws them on every way
  // out, so that no piece runs after this run returns.
  std::exception_ptr meanwhile_failed;
  offered_work meanwhile_guard{rt.device_list()};
  if (meanwhile && meanwhile_pieces > 0) {
    auto work = std::make_shared<idle_work>(meanwhile, meanwhile_pieces);
    if (st.meanwhile_on_places) {
      meanwhile_guard.offer(std::move(work));
    } else {
      lock.unlock();
      try {
        work->finish();
      } catch (...) {
        meanwhile_failed = std::current_exception();
      }
      lock.lock();
    }
  }
  // Watched, every wait is bounded by the watch's tick, and each tick looks at the step.
  bool stalled = false;
  const auto fired = [&st] { return st.all_fired.load(); };
  const auto spin_deadline = std::chrono::steady_clock::now() + step_end_spin;
  // Spun for only with no op actor and no more places than cores (spin_for_firings): a
  // spinning thread would take a core from the CAF worker that fires them, or from places
  // that already share the cores. Without them the last firing is a device thread's (a
  // deferred head, a group's fetch), and sleeping through it cost a wake-up on every step
  // (perf of a 1-place step of ~40 us: the futex wait and the broadcast's wake-up ~10% of
  // the samples). With as many places as cores the spin yields to the device thread sharing
  // its core: on the 2-vCPU Xeon, the in-graph-schedule MLP on 2 places (4 rows a place)
  // went from 100-112k samples/s to 113-123k, the MLP at 64 a place and the CNN on 2 places
  // were unchanged (interleaved runs).
  if (st.spin_for_firings) {
    lock.unlock();
    spin_before_waiting(spin_deadline, [&st] { return st.all_fired.load(); });
    lock.lock();
  }
  if (!watching) st.changed.wait(lock, fired);
  else
    while (!st.changed.wait_for(lock, st.watch.tick(), fired)) {
      lock.unlock();
      stalled = look_at_step(st, rt);
      lock.lock();
      if (stalled) break;
    }
  lock.unlock();
  // Also after a stall: the streams must leave the capture once their work ends.
  if (capturing) st.captured->end_capture(in);
  // A report asked for while steps are short comes here, with the step's work in flight
  // (a relaxed load per step; the waits below look again at every tick).
  if (st.stall.report_request != nullptr && st.stall.report_request->load(std::memory_order_relaxed))
    answer_report_request(st, rt);

  // Overlapping steps: every node has fired, so each stream gets the step's end marker;
  // then only the awaited nodes (the fetches, the feeds' readers) are waited for, and the
  // rest, the tail, is left running behind them: the next step is fired while it runs.
  if (st.env.overlap && !stalled) {
    record_step_ends(st, rt, step);
    stalled = !wait_for_awaited(st, rt, spin_deadline);
    if (!stalled && !failed_so_far(st, rt, in, tail_before)) {
      if (auto failed = meanwhile_guard.finish()) std::rethrow_exception(failed);
      st.tail_step = step;
      rt.unfinished = &st;
      return std::move(in.fetched);
    }
  }

  // Every op actor has enqueued its work; the streams may still be running it (and the
  // last step's tail). Kernel errors are in the step inputs; a stream's own error is the
  // cause only where it did not just wait on another stream's failure (a collective that
  // failed by itself, say): its kind says.
  std::optional<std::string> cause, consequence;
  for (device* d : rt.device_list())
    for (stream_kind kind : all_stream_kinds) {
      stream& s = d->get_stream(kind);
      // A replay's work is on the graph's origin stream and the copy streams only.
      if (replaying && kind != stream_kind::copy && !st.captured->is_origin(s)) continue;
      std::optional<bool> done;
      spin_before_waiting(spin_deadline, [&s] {
        const stream::item_counts c = s.counts();
        return c.completed >= c.enqueued; // a hint: synchronize() below decides
      });
      if (!stalled && !watching) done = s.synchronize();
      while (!stalled && !done && !(done = s.synchronize_for(st.watch.tick())))
        stalled = look_at_step(st, rt);
      // After a stall the stream may still be running the step's work: its error stays
      // until the next run has waited for it (recover_after_stall).
      if (stalled) continue;
      note_stream_failure(*d, kind, s, *done, cause, consequence);
    }
  if (!stalled) { // the last step's tail ended with this step
    st.tail_step = 0;
    if (rt.unfinished == &st) rt.unfinished = nullptr;
  }
  if (auto failed = meanwhile_guard.finish()) meanwhile_failed = failed;
  if (capturing && !stalled) {
    std::string why;
    if (!st.captured->finish_capture(in, rt.scope_list(), why)) {
      // No kernel of the step ran (its launches went into the failed capture): run it again,
      // eagerly, drawing what the step draws (reruns), its messages under a new step number.
      std::fprintf(stderr, "pe-actor: CUDA graphs are off for this program, its steps run eagerly: %s\n",
                   why.c_str());
      ++st.reruns;
      return run_rows(feeds, global_batch, first, fetch_list);
    }
  }
  in.capturing = false;
  std::optional<std::string> kernel_error;
  if (tail_before != 0) // it ran first
    if (auto e = st.frames[tail_before % 2].first_error())
      kernel_error = "step " + std::to_string(tail_before) + " (its work after the fetches): " + *e;
  if (!kernel_error) kernel_error = in.first_error();
  if (st.captured && mode != captured_steps::mode::eager) {
    if (stalled) st.captured->abandon();
    else if (kernel_error || cause || consequence || st.comm->failure()) st.captured->drop();
  }
  if (stalled) throw error(st.stall_error);
  if (kernel_error) throw error(*kernel_error);
  if (cause) throw error(*cause);
  if (consequence) throw error(*consequence);
  if (auto why = st.comm->failure()) throw error("the step's collectives were cut short: " + *why);
  if (meanwhile_failed) std::rethrow_exception(meanwhile_failed);
  return std::move(in.fetched);
}

void parallel_executor::run_meanwhile(std::function<void()> work) {
  if (!work) return run_meanwhile(nullptr, 0);
  run_meanwhile([work = std::move(work)](int) { work(); }, 1);
}

void parallel_executor::run_meanwhile(std::function<void(int piece)> work, int pieces) {
  if (pieces < 0) throw error("run_meanwhile: a negative number of pieces (" + std::to_string(pieces) + ")");
  state_->meanwhile = pieces > 0 ? std::move(work) : nullptr;
  state_->meanwhile_pieces = state_->meanwhile ? pieces : 0;
}

} // namespace pe

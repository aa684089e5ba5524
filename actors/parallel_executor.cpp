#include "actors/parallel_executor.hpp"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include <caf/all.hpp>

#include "actors/reference_executor.hpp"
#include "actors/step_graph.hpp"
#include "actors/trace.hpp"
#include "devices/cpu/blas.hpp"
#include "graph/program_info.hpp"
#include "graph/validate.hpp"

namespace pe {

namespace {

using start_atom = caf::atom_constant<caf::atom("start")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using chunk_atom = caf::atom_constant<caf::atom("chunk")>;
using chunk_done_atom = caf::atom_constant<caf::atom("chunkdone")>;

int default_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

/// The loss-gradient variable the Backward|Loss op seeds, or "" (inference programs).
std::string loss_gradient(const proto::ProgramDesc& main) {
  std::string loss = analyze_program(main).loss;
  return loss.empty() ? "" : grad_name(loss);
}

/// The places' values stacked along dim 0 (scalars count as one row each).
tensor concat_rows(const std::vector<tensor>& values, const std::string& name) {
  auto rows_of = [](const tensor& v) { return v.rank() == 0 ? std::int64_t{1} : v.dim(0); };
  shape_t shape = values[0].rank() == 0 ? shape_t{0} : values[0].shape();
  shape[0] = 0;
  for (const auto& v : values) {
    shape_t tail(v.shape().begin() + (v.rank() == 0 ? 0 : 1), v.shape().end());
    if (v.type() != values[0].type() || !std::equal(tail.begin(), tail.end(), shape.begin() + 1, shape.end()))
      throw error("fetch '" + name + "': places disagree on dtype or trailing dims (" +
                  to_string(v.shape()) + " vs " + to_string(values[0].shape()) + ")");
    shape[0] += rows_of(v);
  }
  tensor out(values[0].type(), shape);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (const auto& v : values) {
    std::memcpy(dst, v.raw(), v.bytes());
    dst += v.bytes();
  }
  return out;
}

} // namespace

// --- shared runtime --------------------------------------------------------------------

struct executor_runtime {
  executor_runtime(std::vector<place> ps, int threads) : places(std::move(ps)), num_threads(threads) {
    for (const auto& p : places)
      if (p.type != place::kind::cpu)
        throw error("place " + to_string(p) + " needs the CUDA build, which is not available yet");
    if (places.empty()) throw error("parallel_executor: no places given");
    for (std::size_t i = 0; i < places.size(); ++i) scopes.push_back(std::make_unique<scope>());
    config.set("scheduler.max-threads", num_threads);
    // Idle workers back off to short sleeps rather than CAF's default 10 ms, which would
    // put milliseconds of latency between the steps of a training loop.
    config.set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::microseconds(500)});
    system = std::make_unique<caf::actor_system>(config);
  }

  std::vector<place> places;
  int num_threads;
  std::vector<std::unique_ptr<scope>> scopes;
  caf::actor_system_config config; // the system keeps a reference: declared before it
  std::unique_ptr<caf::actor_system> system;
};

// --- per-executor state ----------------------------------------------------------------

struct executor_state {
  executor_state(const proto::ProgramDesc& program, build_strategy b)
      : main(program), build(b), declared(validate_program(main)), feeds(main, declared),
        loss_grad(loss_gradient(main)) {}

  proto::ProgramDesc main;
  build_strategy build;
  var_table declared;
  feed_check feeds;
  std::string loss_grad;

  std::unique_ptr<step_graph> graph;
  std::vector<std::string> fetch_list;
  std::vector<caf::actor> actors;    // one per step node, by node id
  std::vector<caf::actor> workers;   // collective chunk workers
  std::vector<cpu_collective> tasks; // by node id: the collective of the running step
  step_inputs in;
  std::vector<std::int64_t> rows;    // of the last run, per place
  std::atomic<int> remaining{0};
  std::uint64_t step = 0;
  trace_recorder* trace = nullptr; // set between steps

  std::mutex mutex;
  std::condition_variable changed;
  bool step_done = true;
  int active_runs = 0;
  bool closing = false;

  /// Called by the last node of a step. Notifies under the lock: the waiting thread may
  /// destroy this state as soon as it can take the lock again.
  void complete_step() {
    std::lock_guard<std::mutex> guard(mutex);
    step_done = true;
    changed.notify_all();
  }
};

namespace {

/// What an op actor remembers between messages.
struct node_actor_state {
  std::uint64_t step = ~std::uint64_t{0};
  int arrived = 0;
  bool poisoned = false;
  std::size_t chunks_left = 0;
  std::int64_t fired_at = 0; // trace clock, when tracing this step
};

} // namespace

/// The behaviour of every op handle: count arrivals, fire, tell the readers.
static caf::behavior node_actor(caf::stateful_actor<node_actor_state>* self,
                                executor_state* st, int id) {
  auto finish = [self, st, id](std::uint64_t step, bool ok) {
    step_node& n = st->graph->nodes()[static_cast<std::size_t>(id)];
    // The span ends before the readers are told, so a reader's span starts after it.
    if (trace_recorder* t = st->trace; t != nullptr && t->wants(step))
      t->record(step, id, self->state.fired_at, t->now_ns());
    st->graph->release(n);
    for (int succ : n.successors)
      self->send(st->actors[static_cast<std::size_t>(succ)], ready_atom::value, step, ok);
    if (st->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) st->complete_step();
  };
  auto fire = [self, st, id, finish](std::uint64_t step) {
    step_node& n = st->graph->nodes()[static_cast<std::size_t>(id)];
    if (trace_recorder* t = st->trace; t != nullptr && t->wants(step))
      self->state.fired_at = t->now_ns();
    if (st->in.cancelled.load()) {
      st->in.fail("step " + std::to_string(step) + " cancelled: the executor is being destroyed");
      self->state.poisoned = true;
    }
    if (self->state.poisoned) return finish(step, false);
    try {
      if (!n.is_collective()) {
        n.run(st->in);
        return finish(step, true);
      }
      cpu_collective& task = st->tasks[static_cast<std::size_t>(id)] = n.collective();
      std::size_t parts = chunk_count(task.total_elements(), st->workers.size());
      if (parts == 1) {
        task.run();
        return finish(step, true);
      }
      self->state.chunks_left = parts;
      for (std::size_t k = 0; k < parts; ++k)
        self->send(st->workers[k % st->workers.size()], chunk_atom::value, step, id, k, parts);
    } catch (const std::exception& e) {
      st->in.fail(e.what());
      finish(step, false);
    }
  };
  auto arrive = [self, st, id, fire](std::uint64_t step, bool ok) {
    auto& s = self->state;
    if (s.step != step) s = node_actor_state{step, 0, false, 0, 0};
    ++s.arrived;
    s.poisoned = s.poisoned || !ok;
    if (s.arrived == st->graph->nodes()[static_cast<std::size_t>(id)].dependencies) fire(step);
  };
  return {
      [self, fire](start_atom, std::uint64_t step) {
        self->state = node_actor_state{step, 0, false, 0, 0};
        fire(step);
      },
      [arrive](ready_atom, std::uint64_t step, bool ok) { arrive(step, ok); },
      [self, finish](chunk_done_atom, std::uint64_t step) {
        if (--self->state.chunks_left == 0) finish(step, true);
      },
  };
}

/// A collective chunk worker: runs chunk k of a node's task and tells the node.
static caf::behavior chunk_worker(caf::event_based_actor* self, executor_state* st) {
  return {[self, st](chunk_atom, std::uint64_t step, int id, std::size_t k, std::size_t parts) {
    st->tasks[static_cast<std::size_t>(id)].run_chunk(k, parts);
    self->send(st->actors[static_cast<std::size_t>(id)], chunk_done_atom::value, step);
  }};
}

// --- parallel_executor -----------------------------------------------------------------

parallel_executor::parallel_executor(std::vector<place> places, const proto::ProgramDesc& startup,
                                     const proto::ProgramDesc& main, build_strategy build,
                                     execution_strategy exec)
    : runtime_(std::make_shared<executor_runtime>(std::move(places),
                                         exec.num_threads > 0 ? exec.num_threads : default_threads())),
      state_(std::make_unique<executor_state>(main, build)) {
  // Places run concurrently on the scheduler's workers: one BLAS thread each keeps them
  // from over-subscribing the cores.
  set_blas_threads(1);
  scope& first = *runtime_->scopes[0];
  reference_executor(startup, first).run({}, {});
  for (std::size_t p = 1; p < runtime_->scopes.size(); ++p)
    for (const auto& v : state_->main.blocks(0).vars())
      if (v.persistable())
        if (const tensor* t = first.find(v.name()); t != nullptr && t->initialized())
          runtime_->scopes[p]->var(v.name()) = t->clone();
}

parallel_executor::parallel_executor(const proto::ProgramDesc& main,
                                     const parallel_executor& share_vars_from,
                                     build_strategy build)
    : runtime_(share_vars_from.runtime_), state_(std::make_unique<executor_state>(main, build)) {}

parallel_executor::~parallel_executor() {
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->closing = true;
    state_->in.cancelled = true;
    state_->changed.wait(lock, [this] { return state_->active_runs == 0; });
  }
  for (auto& a : state_->actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  for (auto& w : state_->workers) caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
}

int parallel_executor::num_places() const {
  return static_cast<int>(runtime_->places.size());
}

int parallel_executor::num_threads() const {
  return runtime_->num_threads;
}

const scope& parallel_executor::place_scope(int p) const {
  return *runtime_->scopes.at(static_cast<std::size_t>(p));
}

void parallel_executor::trace(trace_recorder* recorder) {
  std::lock_guard<std::mutex> guard(state_->mutex);
  if (state_->active_runs > 0) throw error("parallel_executor::trace: a step is running");
  state_->trace = recorder;
}

std::vector<std::string> parallel_executor::place_names() const {
  std::vector<std::string> names;
  for (const auto& p : runtime_->places) names.push_back(to_string(p));
  return names;
}

const proto::ProgramDesc& parallel_executor::program() const {
  return state_->main;
}

const ssa_graph& parallel_executor::graph() const {
  if (!state_->graph) throw error("parallel_executor: no graph before the first run");
  return state_->graph->graph();
}

std::vector<tensor> parallel_executor::run(const feed_map& feeds,
                                           const std::vector<std::string>& fetch_list) {
  return merge(run_per_place(feeds, fetch_list), fetch_list);
}

std::vector<std::vector<tensor>> parallel_executor::run_per_place(
    const feed_map& feeds, const std::vector<std::string>& fetch_list) {
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

  // Feeds: the user's loss gradient (customized scale) goes to every place; everything
  // else is checked against the program and split along dim 0.
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
  const auto places = static_cast<std::int64_t>(rt.places.size());
  std::int64_t batch = -1;
  std::string batch_from;
  for (const auto& [name, value] : data) {
    if (value.rank() == 0) throw error("feed '" + name + "' is a scalar; feeds are split along dim 0");
    if (batch >= 0 && value.dim(0) != batch)
      throw error("feeds '" + batch_from + "' and '" + name + "' have different batch sizes (" +
                  std::to_string(batch) + " vs " + std::to_string(value.dim(0)) + ")");
    batch = value.dim(0);
    batch_from = name;
  }
  if (batch == 0) throw error("the feeds hold an empty batch");
  st.rows.assign(static_cast<std::size_t>(places), 0);
  for (std::int64_t p = 0; p < places && batch > 0; ++p)
    st.rows[static_cast<std::size_t>(p)] = batch / places + (p < batch % places ? 1 : 0);

  if (!st.graph || st.fetch_list != fetch_list) {
    // A new fetch list means new fetch ops: rebuild the graph and its actors.
    for (auto& a : st.actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    st.actors.clear();
    std::vector<scope*> scopes;
    for (auto& s : rt.scopes) scopes.push_back(s.get());
    st.graph = std::make_unique<step_graph>(
        st.main, build_ssa_graph(st.main, static_cast<int>(places), st.build, fetch_list), scopes,
        rt.places);
    st.fetch_list = fetch_list;
    st.tasks.assign(st.graph->nodes().size(), {});
    for (const auto& n : st.graph->nodes())
      st.actors.push_back(rt.system->spawn(node_actor, &st, n.id));
    if (st.workers.empty())
      for (int w = 0; w < rt.num_threads; ++w) st.workers.push_back(rt.system->spawn(chunk_worker, &st));
  }

  std::int64_t offset = 0;
  for (std::int64_t p = 0; p < places; ++p) {
    scope& s = *rt.scopes[static_cast<std::size_t>(p)];
    std::int64_t n = st.rows[static_cast<std::size_t>(p)];
    for (const auto& [name, value] : data) {
      tensor rows = value.slice(offset, offset + n);
      s.var(name) = st.feeds.written(name) ? rows.clone() : rows;
    }
    if (loss_grad.initialized()) s.var(st.loss_grad) = loss_grad.clone();
    offset += n;
  }
  st.in.loss_scale.clear();
  if (!customized)
    for (auto n : st.rows)
      st.in.loss_scale.push_back(st.build.scale == build_strategy::gradient_scale::one
                                     ? 1.f
                                     : static_cast<float>(n) / static_cast<float>(std::max<std::int64_t>(batch, 1)));
  st.in.reset(fetch_list.size(), static_cast<std::size_t>(places));
  st.graph->reset_counts();

  std::unique_lock<std::mutex> lock(st.mutex);
  st.step_done = st.graph->nodes().empty();
  st.remaining = static_cast<int>(st.graph->nodes().size());
  const std::uint64_t step = ++st.step;
  for (int source : st.graph->sources())
    caf::anon_send(st.actors[static_cast<std::size_t>(source)], start_atom::value, step);
  st.changed.wait(lock, [&st] { return st.step_done; });
  lock.unlock();
  if (auto e = st.in.first_error()) throw error(*e);
  return std::move(st.in.fetched);
}

std::vector<tensor> parallel_executor::merge(std::vector<std::vector<tensor>> per_place,
                                             const std::vector<std::string>& fetch_list) const {
  const executor_state& st = *state_;
  std::int64_t batch = 0;
  for (auto n : st.rows) batch += n;
  std::vector<tensor> merged;
  for (std::size_t k = 0; k < per_place.size(); ++k) {
    auto& values = per_place[k];
    const shape_t& declared = st.declared.at(fetch_list[k]).dims;
    bool batch_dependent = std::find(declared.begin(), declared.end(), -1) != declared.end();
    if (values.size() == 1) {
      merged.push_back(std::move(values[0]));
    } else if (!batch_dependent && values[0].numel() == 1 && values[0].type() == dtype::fp32) {
      tensor out(dtype::fp32, values[0].shape());
      double sum = 0;
      for (std::size_t p = 0; p < values.size(); ++p)
        if (st.rows[p] > 0)
          sum += static_cast<double>(st.rows[p]) / static_cast<double>(batch) * values[p].data<float>()[0];
      out.data<float>()[0] = static_cast<float>(sum);
      merged.push_back(std::move(out));
    } else {
      merged.push_back(concat_rows(values, fetch_list[k]));
    }
  }
  return merged;
}

} // namespace pe

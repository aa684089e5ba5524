#include "actors/op_actor.hpp"

#include <algorithm>
#include <memory>

#include "actors/trace.hpp"
#include "core/steady_clock.hpp"

namespace pe {

namespace {

/// Makes work enqueued next on `s` come after every input written on another stream that
/// `place` reads (place -1: every input). Returns false when, in wait mode, an input's work
/// had failed: the caller then fails `s` so that the failure spreads as a stream failure.
bool order_after_inputs(const actor_env& env, stream& s, const std::vector<event_ref>& inputs,
                        int place) {
  bool ok = true;
  for (const event_ref& r : inputs) {
    if (r.done == nullptr || r.on == &s || (place >= 0 && r.place != place)) continue;
    if (env.sync == sync_mode::event) s.wait(*r.done);
    else ok = r.done->synchronize() && ok;
  }
  return ok;
}

/// The failure is a consequence: the executor reports the input's own failure first.
void fail_stream(stream& s) {
  s.enqueue([] { throw error(error_kind::consequence, "waited on failed work: an input's writer failed"); });
}

/// What a traced firing's span goes to: the recorder, once the stream knows when the work
/// ran (on a GPU place, once the device finished it).
stream::span_sink trace_sink(trace_recorder* t, const step_node& n) {
  return [t, step = n.fired_step, id = n.id, enqueued = n.enqueued_ns](const stream::work_span& span) {
    if (span.launch_end_ns == 0) {
      t->record(step, id, enqueued, t->from_steady(span.start_ns), t->from_steady(span.end_ns));
      return;
    }
    t->record_launched(step, id, enqueued, t->from_steady(span.start_ns), t->from_steady(span.end_ns),
                       t->from_steady(span.launch_start_ns), t->from_steady(span.launch_end_ns));
  };
}

/// The body of a computation's, loss-gradient scale's or fetch's task, on its place's
/// stream, for the step of `in`: `launch` runs the node (on a GPU place, launches its
/// kernels or copies), then the node's references are released (stream-ordered). The
/// step comes from `in`, not from the node: the node may be fired for the next step
/// before this task runs (overlap_steps).
template <class Launch>
void run_node(step_inputs& in, step_node& n, const Launch& launch) {
  actor_env& env = *in.env;
  if (in.cancelled.load()) {
    in.fail("step " + std::to_string(in.step) + " cancelled: the executor is being destroyed");
    throw error("cancelled");
  }
  node_live* live = env.live ? &env.graph->live(n.id) : nullptr;
  if (live != nullptr) {
    live->started_ns.store(steady_ns(), std::memory_order_relaxed);
    live->started.store(in.step, std::memory_order_release);
  }
  try {
    launch();
  } catch (const std::exception& e) {
    in.fail(e.what());
    if (live != nullptr) live->failed.store(in.step, std::memory_order_release);
    throw;
  }
  env.graph->release(n, in);
  if (live != nullptr) live->finished.store(in.step, std::memory_order_release);
}

/// An awaited node's task is done (run, skipped or failed): the last of its step's tells
/// the thread that runs the step. Nothing of `in` or the graph is touched after that: the
/// step's thread may return and the executor be destroyed.
struct awaited_countdown {
  step_inputs* in;
  ~awaited_countdown() {
    actor_env& env = *in->env;
    if (in->awaited_left.fetch_sub(1, std::memory_order_acq_rel) == 1) env.awaited_done();
  }
};

/// A computation, loss-gradient scale or fetch: on its place's stream. On a GPU place the
/// scale and fetch are copies through the device (transfer_work), launched by the task.
void launch_op(actor_env& env, step_node& n, const std::vector<event_ref>& inputs,
               trace_recorder* t) {
  device& d = *env.devices[static_cast<std::size_t>(n.place)];
  stream& s = d.get_stream(n.runs_on);
  if (!order_after_inputs(env, s, inputs, -1)) fail_stream(s);
  // A computation's task holds two pointers: small enough for std::function not to allocate.
  stream::task work =
      n.is_transfer(d)
          ? stream::task([inp = env.in, np = &n, copy = n.transfer_work(d, s, *env.in)] {
              run_node(*inp, *np, copy);
            })
          : stream::task([inp = env.in, np = &n] { run_node(*inp, *np, [&] { np->run(*inp); }); });
  if (env.overlap && n.awaited) {
    // Runs on a failed stream too (skipping the node), so that the count always ends.
    auto counted = [inp = env.in, work = std::move(work)](bool failed) {
      awaited_countdown countdown{inp};
      if (!failed) work();
    };
    if (t != nullptr) s.enqueue_always_timed(std::move(counted), trace_sink(t, n));
    else s.enqueue_always(std::move(counted));
  } else if (t != nullptr) {
    s.enqueue_timed(std::move(work), trace_sink(t, n));
  } else {
    s.enqueue(std::move(work));
  }
  if (env.live) env.graph->live(n.id).ticket.store(s.counts().enqueued, std::memory_order_relaxed);
  if (n.records_on(n.place)) s.record(n.done_on(n.place));
}

/// A collective: every place's part on its communication stream, in sequence.
void launch_collective(actor_env& env, step_node& n, const std::vector<event_ref>& inputs,
                       trace_recorder* t) {
  collective_call call = n.call();
  call.sequence += env.sequence_base;
  call.timed = t != nullptr;
  communicator::completion done = [&env, &n, t, in = env.in, step = n.fired_step, enqueued = n.enqueued_ns](
                                      const collective_span& span, bool ok) {
    node_live* live = env.live ? &env.graph->live(n.id) : nullptr;
    // A failed collective's message is its streams' error, which run() reports (or the
    // kernel error that poisoned it, reported first).
    if (!ok) {
      if (live != nullptr) live->failed.store(step, std::memory_order_release);
      return;
    }
    if (t != nullptr)
      t->record(step, n.id, enqueued, t->from_steady(span.start_ns), t->from_steady(span.end_ns),
                span.dense_fallback);
    env.graph->release(n, *in);
    if (live != nullptr) live->finished.store(step, std::memory_order_release);
  };
  for (std::size_t p = 0; p < env.devices.size(); ++p) {
    stream& s = env.devices[p]->get_stream(stream_kind::communication);
    if (!order_after_inputs(env, s, inputs, static_cast<int>(p))) fail_stream(s);
    // On a CPU place the communicator may ask whether this place's inputs are written, to
    // complete the collective for it while its thread runs a kernel (inproc_communicator).
    // One call for every place: a place that is not a CPU place must not inherit the CPU
    // place's question before it.
    call.inputs_ready = nullptr;
    if (env.devices[p]->where().type == place::kind::cpu) {
      std::vector<const event*> writers;
      for (const event_ref& r : inputs)
        if (r.done != nullptr && r.place == static_cast<int>(p)) writers.push_back(r.done);
      call.inputs_ready = [writers = std::move(writers)] {
        // synchronize() of a finished CPU event returns at once: false when the work failed.
        return std::all_of(writers.begin(), writers.end(), [](const event* e) { return e->query(); }) &&
               std::all_of(writers.begin(), writers.end(), [](const event* e) { return e->synchronize(); });
      };
    }
    env.comm->launch(call, static_cast<int>(p), n.buffers(static_cast<int>(p)), s,
                     p == 0 ? done : communicator::completion{});
    if (n.records_on(static_cast<int>(p))) s.record(n.done_on(static_cast<int>(p)));
  }
}

void fire_inline(actor_env& env, int id, std::uint64_t step, event_ref input);
void arrive_on_step_thread(actor_env& env, int id, std::uint64_t step, event_ref input);

/// Fires node `id` for `step` on the calling thread: enqueues its work after `inputs`, then
/// tells each reader through `send(reader actor, step, event_ref)`, or fires it where that
/// message is all it waits for (step_graph::fires_inline).
template <class Send>
void fire_node(actor_env& env, int id, std::uint64_t step, const std::vector<event_ref>& inputs, Send&& send) {
  step_node& n = env.graph->nodes()[static_cast<std::size_t>(id)];
  trace_recorder* t = env.trace != nullptr && env.trace->wants(step) ? env.trace : nullptr;
  n.fired_step = step;
  n.enqueued_ns = t != nullptr ? t->now_ns() : 0;
  if (env.live) env.graph->live(id).fired.store(step, std::memory_order_release);
  try {
    if (n.is_collective()) launch_collective(env, n, inputs, t);
    else launch_op(env, n, inputs, t);
  } catch (const std::exception& e) {
    env.in->fail(n.label + ": " + e.what()); // enqueueing itself failed: nothing to wait on
  }
  for (const step_node::edge& e : n.successors) {
    // A reader in the node's own firing group is enqueued by this firing (fire_group).
    if (env.graph->nodes()[static_cast<std::size_t>(e.to)].head == n.head) continue;
    event_ref r;
    if (e.place >= 0) // the event of the place whose variable version the reader reads
      r = {&n.done_on(e.place), &env.devices[static_cast<std::size_t>(e.place)]->get_stream(n.runs_on), e.place};
    if (env.graph->fires_inline(e.to)) fire_inline(env, e.to, step, r);
    else if (env.graph->nodes()[static_cast<std::size_t>(e.to)].counted_by_step_thread)
      arrive_on_step_thread(env, e.to, step, r);
    else send(env.actors[static_cast<std::size_t>(e.to)], step, r);
  }
  if (env.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) env.all_fired();
}

/// Fires head `id`'s group for `step`: the head after `inputs`, then its followers (whose
/// inputs are all the group's, on the same stream: stream order covers them).
template <class Send>
void fire_group(actor_env& env, int id, std::uint64_t step, const std::vector<event_ref>& inputs, Send&& send) {
  static const std::vector<event_ref> no_inputs;
  // The followers' bounds are read before the head fires, and nothing of the graph after the
  // last firing: once the step's last node has fired, the thread running the step may
  // return and destroy the executor, `env` and the graph with it (a follower not yet fired
  // keeps the step, and so the graph, alive).
  const std::vector<int>& followers = env.graph->nodes()[static_cast<std::size_t>(id)].followers;
  const int* next = followers.data();
  const int* const end = next + followers.size();
  fire_node(env, id, step, inputs, send);
  for (; next != end; ++next) fire_node(env, *next, step, no_inputs, send);
}

void send_anonymously(const caf::actor& reader, std::uint64_t step, event_ref r) {
  caf::anon_send(reader, ready_atom::value, step, r);
}

/// Whether node `n` should wait on the host until input `r` is done before its work enters
/// its stream: `r` is written on another stream, is not done yet, and its event can call
/// back (a CPU place's). Why: a CPU place's three streams share one thread (cpu_device), so
/// a wait at the head of the compute stream holds every kernel queued behind it. The op
/// actors fire as their inputs' work is enqueued, not done, so an optimizer op waiting for
/// its gradient's all-reduce often entered the compute stream before backward ops that
/// came ready in the same instant, and the place stood still for the whole collective (in
/// traces of the MLP: 80 to 320 us per layer). Entering the stream once the gradient is
/// there, it lets them run meanwhile. A collective never defers: every place issues the
/// collectives in one sequence, and its communication stream holds nothing but that.
bool defers(const actor_env& env, const step_node& n, const event_ref& r) {
  return r.done != nullptr && r.done->calls_back() &&
         r.on != &env.devices[static_cast<std::size_t>(n.place)]->get_stream(n.runs_on) && !r.done->query();
}

/// Fires `id` for `step` once every input from `next` on that defers() is done: registers
/// itself as the first such input's callback (run by the thread that finishes it), else
/// fires now. Where an event cannot call back, its input is left to the stream's wait.
void fire_when_inputs_done(actor_env& env, int id, std::uint64_t step,
                           std::shared_ptr<const std::vector<event_ref>> inputs, std::size_t next) {
  const step_node& n = env.graph->nodes()[static_cast<std::size_t>(id)];
  for (; next < inputs->size(); ++next) {
    if (!defers(env, n, (*inputs)[next])) continue;
    const bool registered = (*inputs)[next].done->when_done(
        [&env, id, step, inputs, after = next + 1] { fire_when_inputs_done(env, id, step, inputs, after); });
    if (registered) return;
  }
  fire_group(env, id, step, *inputs, send_anonymously);
}

/// Fires head `id` for `step` once its `inputs` (all its input edges) are in: after them on
/// the host where they defer (see defers), else now.
template <class Send>
void fire_ready(actor_env& env, int id, std::uint64_t step, const std::vector<event_ref>& inputs, Send&& send) {
  const step_node& n = env.graph->nodes()[static_cast<std::size_t>(id)];
  if (env.sync == sync_mode::event && !n.is_collective() &&
      std::any_of(inputs.begin(), inputs.end(), [&](const event_ref& r) { return defers(env, n, r); })) {
    fire_when_inputs_done(env, id, step, std::make_shared<const std::vector<event_ref>>(inputs), 0);
    return;
  }
  fire_group(env, id, step, inputs, send);
}

/// A firing that fire_inline queued on this thread: with the one input `input`, or, for a
/// head counted by the step's thread, with the events it collected (`arrivals`).
struct inline_firing {
  actor_env* env;
  int id;
  std::uint64_t step;
  event_ref input;
  const std::vector<event_ref>* arrivals = nullptr;
};

/// This thread's queue of inline firings while it runs them, else null: a firing that
/// fires a reader inline queues it, so a chain of them runs in a loop, not in a recursion
/// as deep as the chain.
thread_local std::vector<inline_firing>* inline_queue = nullptr;

/// Fires `first`'s head on this thread, the one that brought its last message (fire_inline,
/// arrive_on_step_thread), with the firings it leads to queued behind it. What the sender
/// owes the step is unchanged: the sender has not yet counted itself fired (fire_node), so
/// the step cannot end meanwhile.
void run_inline(const inline_firing& first) {
  if (inline_queue != nullptr) {
    inline_queue->push_back(first);
    return;
  }
  std::vector<inline_firing> queue = {first};
  inline_queue = &queue;
  struct reset {
    ~reset() { inline_queue = nullptr; }
  } on_exit;
  std::vector<event_ref> inputs;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const inline_firing f = queue[i]; // a copy: firing it may grow the queue
    if (f.arrivals != nullptr) {
      fire_ready(*f.env, f.id, f.step, *f.arrivals, send_anonymously);
      continue;
    }
    inputs.clear();
    if (f.input.done != nullptr) inputs.push_back(f.input);
    fire_ready(*f.env, f.id, f.step, inputs, send_anonymously);
  }
}

/// Fires head `id`, which waits for the one message `input` (step_graph::fires_inline), on
/// the thread that would have sent it.
void fire_inline(actor_env& env, int id, std::uint64_t step, event_ref input) {
  run_inline({&env, id, step, input});
}

/// A message to a head counted by the step's thread (step_graph::count_on_step_thread),
/// from that thread: counted as its actor would, and the head fired (inline) by the last.
/// Only that thread touches the count, so it needs no lock; the step stamp resets it.
void arrive_on_step_thread(actor_env& env, int id, std::uint64_t step, event_ref input) {
  step_node& n = env.graph->nodes()[static_cast<std::size_t>(id)];
  if (n.arrivals_step != step) {
    n.arrivals_step = step;
    n.arrived = 0;
    n.arrivals.clear();
  }
  if (input.done != nullptr) n.arrivals.push_back(input);
  if (++n.arrived == n.dependencies) run_inline({&env, id, step, {}, &n.arrivals});
}

} // namespace

void fire_sources(actor_env& env, const std::vector<int>& sources, std::uint64_t step) {
  static const std::vector<event_ref> no_inputs;
  // A node of each group in turn: every place's first kernels are enqueued first, so the
  // places start together. The caller is the thread that runs the step: the graph outlives
  // this call.
  const std::vector<step_node>& nodes = env.graph->nodes();
  for (std::size_t k = 0;; ++k) {
    bool any = false;
    for (int head : sources) {
      const std::vector<int>& followers = nodes[static_cast<std::size_t>(head)].followers;
      if (k > followers.size()) continue;
      any = true;
      fire_node(env, k == 0 ? head : followers[k - 1], step, no_inputs, send_anonymously);
    }
    if (!any) return;
  }
}

caf::behavior op_actor(caf::stateful_actor<op_actor_state>* self, actor_env* env, int id) {
  auto fire = [self, env, id](std::uint64_t step) {
    fire_ready(*env, id, step, self->state.inputs, [self](const caf::actor& reader, std::uint64_t s, event_ref r) {
      self->send(reader, ready_atom::value, s, r);
    });
  };
  return {
      [self, env, id, fire](ready_atom, std::uint64_t step, event_ref r) {
        auto& s = self->state;
        if (s.step != step) {
          s.step = step;
          s.arrived = 0;
          s.inputs.clear();
        }
        ++s.arrived;
        if (r.done != nullptr) s.inputs.push_back(r);
        if (s.arrived == env->graph->nodes()[static_cast<std::size_t>(id)].dependencies) fire(step);
      },
  };
}

} // namespace pe

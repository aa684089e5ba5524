#include "actors/op_actor.hpp"

#include "actors/trace.hpp"

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

void fail_stream(stream& s) {
  s.enqueue([] { throw error("waited on failed work: an input's writer failed"); });
}

/// A computation, loss-gradient scale or fetch: on its place's stream. On a GPU place the
/// scale and fetch are copies through the device, enqueued now in stream order; what runs
/// on the stream's thread after them only traces and releases.
void launch_op(actor_env& env, step_node& n, const std::vector<event_ref>& inputs) {
  device& d = *env.devices[static_cast<std::size_t>(n.place)];
  stream& s = d.get_stream(n.runs_on);
  if (!order_after_inputs(env, s, inputs, -1)) fail_stream(s);
  const bool transfer = n.is_transfer(d);
  if (transfer) n.transfer(d, s, *env.in);
  // Two pointers: small enough for std::function to hold without allocating.
  s.enqueue([envp = &env, np = &n, transfer] {
    actor_env& env = *envp;
    step_node& n = *np;
    const std::uint64_t step = n.fired_step;
    trace_recorder* t = env.trace != nullptr && env.trace->wants(step) ? env.trace : nullptr;
    const std::int64_t start = t != nullptr ? t->now_ns() : 0;
    if (env.in->cancelled.load()) {
      env.in->fail("step " + std::to_string(step) + " cancelled: the executor is being destroyed");
      throw error("cancelled");
    }
    try {
      if (!transfer) n.run(*env.in);
    } catch (const std::exception& e) {
      env.in->fail(e.what());
      throw;
    }
    if (t != nullptr) t->record(step, n.id, n.enqueued_ns, start, t->now_ns());
    env.graph->release(n);
  });
  s.record(n.done_on(n.place));
}

/// A collective: every place's part on its communication stream, in sequence.
void launch_collective(actor_env& env, step_node& n, const std::vector<event_ref>& inputs) {
  collective_call call = n.call();
  call.sequence += env.sequence_base;
  const std::uint64_t step = n.fired_step;
  const std::int64_t enqueued = n.enqueued_ns;
  communicator::completion done = [&env, &n, step, enqueued](const collective_span& span, bool ok) {
    // A failed collective's message is its streams' error, which run() reports (or the
    // kernel error that poisoned it, reported first).
    if (!ok) return;
    if (trace_recorder* t = env.trace; t != nullptr && t->wants(step))
      t->record(step, n.id, enqueued, t->from_steady(span.start_ns), t->from_steady(span.end_ns));
    env.graph->release(n);
  };
  for (std::size_t p = 0; p < env.devices.size(); ++p) {
    stream& s = env.devices[p]->get_stream(stream_kind::communication);
    if (!order_after_inputs(env, s, inputs, static_cast<int>(p))) fail_stream(s);
    env.comm->launch(call, static_cast<int>(p), n.buffers(static_cast<int>(p)), s,
                     p == 0 ? done : communicator::completion{});
    s.record(n.done_on(static_cast<int>(p)));
  }
}

} // namespace

caf::behavior op_actor(caf::stateful_actor<op_actor_state>* self, actor_env* env, int id) {
  auto fire = [self, env, id](std::uint64_t step) {
    step_node& n = env->graph->nodes()[static_cast<std::size_t>(id)];
    trace_recorder* t = env->trace != nullptr && env->trace->wants(step) ? env->trace : nullptr;
    n.fired_step = step;
    n.enqueued_ns = t != nullptr ? t->now_ns() : 0;
    try {
      if (n.is_collective()) launch_collective(*env, n, self->state.inputs);
      else launch_op(*env, n, self->state.inputs);
    } catch (const std::exception& e) {
      env->in->fail(n.label + ": " + e.what()); // enqueueing itself failed: nothing to wait on
    }
    for (const step_node::edge& e : n.successors) {
      event_ref r;
      if (e.place >= 0) // the event of the place whose variable version the reader reads
        r = {&n.done_on(e.place),
             &env->devices[static_cast<std::size_t>(e.place)]->get_stream(n.runs_on), e.place};
      self->send(env->actors[static_cast<std::size_t>(e.to)], ready_atom::value, step, r);
    }
    if (env->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) env->all_fired();
  };
  return {
      [self, fire](start_atom, std::uint64_t step) {
        self->state = op_actor_state{step, 0, {}};
        fire(step);
      },
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

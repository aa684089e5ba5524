#pragma once

// The op actor and its message protocol. Included only by the executor's own .cpp files:
// it brings in CAF.

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include <caf/all.hpp>

#include "actors/event_ref.hpp"
#include "actors/parallel_executor.hpp"
#include "actors/step_graph.hpp"
#include "collectives/communicator.hpp"
#include "devices/device.hpp"

namespace pe {

class trace_recorder;

/// What every op actor of one executor shares. Set before a step, read during it.
struct actor_env {
  step_graph* graph = nullptr;
  std::vector<caf::actor> actors;   ///< by node id
  std::vector<device*> devices;     ///< by place
  communicator* comm = nullptr;
  step_inputs* in = nullptr;       ///< the inputs of the step being fired
  sync_mode sync = sync_mode::event;
  trace_recorder* trace = nullptr;  ///< set between steps
  std::uint64_t sequence_base = 0;  ///< this step's first collective sequence number
  std::atomic<int> remaining{0};    ///< op actors yet to fire this step
  /// Whether the nodes record their live state (step_graph::live) for the stall watch and
  /// on-demand reports; set once, when the executor is made. Off, that costs one branch per
  /// firing and node.
  bool live = false;
  std::function<void()> all_fired;  ///< called by the last op actor of a step
  /// Whether run() may return before this step's tail has run (execution_strategy::
  /// overlap_steps; a traced step runs whole): then the awaited nodes' tasks count down
  /// step_inputs::awaited_left, on a failed stream too, and the one that ends it calls
  /// awaited_done. Set before each step is fired.
  bool overlap = false;
  std::function<void()> awaited_done;
};

using ready_atom = caf::atom_constant<caf::atom("ready")>;

/// The behaviour of every op handle but a source's (fire_sources fires those). Once
/// (ready_atom, step, event_ref) arrived for every input edge: make its stream wait for
/// the inputs written on other streams, enqueue its work, record its event, and tell each
/// reader (ready_atom, step, event_ref). The op actor never runs a kernel itself: the host
/// runs ahead while the places' streams run the kernels back to back.
caf::behavior op_actor(caf::stateful_actor<struct op_actor_state>* self, actor_env* env, int id);

/// Fires the groups of the source nodes `sources` (step_graph::sources: nodes without
/// inputs heading a firing group) for `step` on the calling thread: enqueues their work and
/// tells their readers, as an op actor does once its inputs arrived. What the thread that
/// runs a step does, so that the first kernels are on their streams without waiting for a
/// CAF worker to wake (a sleeping worker takes tens of microseconds to wake on a virtual
/// machine's idle core, on every step). A source's actor gets no message and keeps no state
/// for the step: a source has nothing to count. The groups are fired a node of each in
/// turn: a place's source group is most of its step, and fired one group after the other,
/// place 1 started its step 76 us after place 0 (the MLP at 64 rows per place), which then
/// waited that long for place 1 at every collective.
void fire_sources(actor_env& env, const std::vector<int>& sources, std::uint64_t step);

struct op_actor_state {
  std::uint64_t step = ~std::uint64_t{0};
  int arrived = 0;
  std::vector<event_ref> inputs; ///< events of this step's input edges
};

} // namespace pe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pe::event_ref)

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/event_ref.hpp"
#include "collectives/communicator.hpp"
#include "devices/device.hpp"
#include "graph/exec/bound_op.hpp"
#include "graph/exec/scope.hpp"
#include "graph/ssa_graph.hpp"

namespace pe {

struct actor_env;

/// What one step needs besides the graph: per-place loss-gradient scales, fetched tensors,
/// the first error, a cancel flag, the reference counts of its temporaries and the count of
/// its awaited work. Written before the step starts and read after it ends, except where
/// atomic. An executor keeps two, used by turns: the tail of one step (its work after the
/// fetches, see step_node::awaited) may run while the next one starts.
struct step_inputs {
  /// What every op actor of the executor shares (set once): the step's tasks reach it here.
  actor_env* env = nullptr;
  std::uint64_t step = 0;          ///< the step these inputs are for
  std::uint64_t steps_before = 0;  ///< told to each computation before it runs (bound_op::set_steps_before)
  /// Per temporary, the nodes of this step yet to touch it (step_graph::reset_counts, release).
  std::vector<std::atomic<int>> counts;
  /// Nodes of this step whose work run() waits for (step_node::awaited) yet to finish.
  std::atomic<int> awaited_left{0};
  std::vector<float> loss_scale;                 ///< [place]; empty: the user feeds loss@GRAD
  std::vector<std::vector<tensor>> fetched;      ///< [fetch index][place]
  /// A step being captured for replay (stream_capture): a fetch on a GPU place takes a
  /// reference to its variable's device tensor into fetch_sources (the copy to the host,
  /// which waits for the device, runs after the capture, and after every replay).
  bool capturing = false;
  std::vector<std::vector<tensor>> fetch_sources; ///< [fetch index][place], when capturing
  std::atomic<bool> cancelled{false};

  /// Records `message` unless an earlier error was recorded (the first error wins).
  void fail(const std::string& message);
  std::optional<std::string> first_error() const;
  void reset(std::size_t fetches, std::size_t places);

 private:
  mutable std::mutex mutex_;
  std::optional<std::string> error_;
};

/// One op handle, ready to fire: everything but the messaging. Built once per graph.
class step_node {
 public:
  /// An output edge: the reader, and the place of the variable version it reads (whose
  /// event the reader waits on); place -1 for a launch-order edge between collectives,
  /// which orders the launches on the host and carries no event.
  struct edge {
    int to = 0;
    int place = 0;
  };

  int id = 0;
  op_handle::kind what = op_handle::kind::computation;
  int place = 0;              ///< computation, scale, fetch: where it runs; reduce/broadcast: the owner here, or -1
  int root = 0;               ///< reduce/broadcast: the owner's global rank
  sparse_exchange exchange = sparse_exchange::automatic; ///< all_gather: how (op_handle's)
  std::string type;           ///< "mul", "all_reduce", "fetch", ...
  std::string label;          ///< "op #3 (mul) on cpu:1", "all_reduce(fc_0.w_0@GRAD)", ...
  stream_kind runs_on = stream_kind::compute;
  int dependencies = 0;       ///< input edges from other ops: arrivals needed to fire
  std::vector<edge> successors;
  /// The node whose firing also fires this one: itself unless the node follows a firing
  /// group's head (see step_graph's firing groups). Only a head has an actor and inputs
  /// from outside its group.
  int head = 0;
  /// Whether run() waits for this node's work before it returns: a fetch, or a node that
  /// touches a variable the host writes before each step (a feed: any non-persistable
  /// variable read before anything writes it; the loss gradient). The rest of the step,
  /// its tail (the optimizer's updates after the last feed reader, say), may still run
  /// when the next step is fired behind it on the same streams.
  bool awaited = false;
  /// A head's followers, in the order they are enqueued right after it.
  std::vector<int> followers;
  std::vector<int> releases;  ///< reference counts this node holds (see step_graph)
  std::uint64_t sequence = 0; ///< collectives: launch position within a step (0, 1, ...)
  /// What the op actor hands the work it enqueues, written before the enqueue (which orders
  /// it before the work): the step, and when the actor fired (trace clock; 0 untraced).
  std::uint64_t fired_step = 0;
  std::int64_t enqueued_ns = 0;
  /// A head whose every message is sent by the thread running the step, while it fires the
  /// sources (step_graph::count_on_step_thread): that thread counts its arrivals here, for
  /// `arrivals_step`, and collects their events.
  bool counted_by_step_thread = false;
  std::uint64_t arrivals_step = ~std::uint64_t{0};
  int arrived = 0;
  std::vector<event_ref> arrivals;

  bool is_collective() const { return pe::is_collective(what); }

  /// Computation and the executor-performed ops, on the stream's thread. Throws on error.
  void run(step_inputs& in);

  /// Whether this node moves data between the host and a place whose memory the host
  /// cannot touch (a scale or fetch on a GPU place): then it runs as transfer() instead.
  bool is_transfer(const device& d) const;

  /// A transfer node's launch code, to run on `on`'s thread in the node's task: the
  /// loss-gradient scale filled in on the device, or the fetched variable copied to the host
  /// (while a step is captured: a reference to it kept in in.fetch_sources).
  /// What the copy needs lives as long as the returned task (the stream drops a task after
  /// its launch code ran, and the device's copy reads pageable host memory before it returns).
  stream::task transfer_work(device& d, stream& on, step_inputs& in);

  /// Collectives: what every rank launches (sequence counted within the step).
  collective_call call() const;

  /// Collectives: place p's tensors, in the same order on every place.
  const std::vector<tensor*>& buffers(int p) const { return slots_[static_cast<std::size_t>(p)]; }

  /// The event recorded after this node's work on place p (p = place for non-collectives).
  event& done_on(int p) { return *events_[static_cast<std::size_t>(p)]; }

  /// Whether the node's work on place p is followed by a record of done_on(p): only where a
  /// reader on p runs on another stream (stream order covers the readers on the same one).
  bool records_on(int p) const { return records_[static_cast<std::size_t>(p)] != 0; }

 private:
  friend class step_graph;
  std::optional<bound_op> op_;              // computation
  std::vector<std::vector<tensor*>> slots_; // collectives: [place][var]; others: [0] = {target}
  std::vector<std::unique_ptr<event>> events_; // by place; null where the node does not run
  std::vector<char> records_;                  // by place: records_on
  shape_t shape_;                           // scale_loss_grad: loss@GRAD's shape
  int fetch_index_ = -1;
};

/// What a stall report reads of one node while a step runs. Written by the node's actor
/// and by the stream that runs its work, read by the thread that waits for the step:
/// atomics, each a step number (steps count from 1; 0: never). A cache line each: nodes
/// of different places are written by different device threads.
struct alignas(64) node_live {
  std::atomic<std::uint64_t> fired{0};     ///< the step the node last fired in
  std::atomic<std::uint64_t> started{0};   ///< the step its work last started in (not collectives)
  std::atomic<std::int64_t> started_ns{0}; ///< steady clock, when that work started
  std::atomic<std::uint64_t> finished{0};  ///< the step its work last finished in (collectives: on every rank)
  std::atomic<std::uint64_t> failed{0};    ///< the step its work last failed in
  /// Its stream's enqueued count just after its work was enqueued (its place in the queue;
  /// approximate where other actors enqueue on that stream at the same moment).
  std::atomic<std::uint64_t> ticket{0};
};

/// The SSA graph bound to per-place scopes and devices: one step_node per op handle, an
/// event per (node, place), launch-order edges chaining the collectives in their sequence,
/// and the reference counts that free each temporary once the last op touching it on a
/// place has run, so a step's memory stays near its live set. With `check_nan_inf` every
/// computation checks its FP32 outputs on its stream after its kernel (see bound_op).
///
/// Firing groups (unless `actor_per_op`): a node whose every input comes from nodes of one
/// group, on the same place and stream as that group's head, joins the group, and is
/// enqueued right after the group's earlier nodes by whatever fires the head; the nodes
/// without inputs of one place and stream (all fired when the step starts) form one group.
/// Before grouping, an edge that another path of edges already implies is dropped (see
/// drop_implied_edges): the optimizer op that waits for a gradient's all-reduce, its global
/// norm and the parameter's last reader needs only the norm's message.
/// Why: an op
/// actor's firing costs a few microseconds of a CAF worker (the message, its matching,
/// the mailbox), and on small steps those firings, not the kernels, set the pace: the MLP
/// at 4 rows per place fires ~80 op actors per step on one worker. A follower would have
/// fired as soon as its group's previous node did anyway, onto the same stream, which
/// runs them in that order: grouping changes no data dependency and no stream's order of
/// dependent work, only who enqueues it. Its trace spans, live state and reference counts
/// stay its own.
class step_graph {
 public:
  step_graph(const proto::ProgramDesc& main, ssa_graph graph, std::vector<scope*> scopes,
             const std::vector<device*>& devices, bool check_nan_inf = false, bool actor_per_op = false);

  const ssa_graph& graph() const { return graph_; }
  std::vector<step_node>& nodes() { return nodes_; }
  /// The nodes without inputs that head a firing group: what the thread running a step fires.
  const std::vector<int>& sources() const { return sources_; }
  /// The heads that wait for one message only, and are not collectives: the thread that
  /// would send it fires them instead (op_actor.cpp), saving a CAF worker's hop.
  bool fires_inline(int id) const {
    const step_node& n = nodes_[static_cast<std::size_t>(id)];
    return n.head == n.id && n.dependencies == 1 && !n.is_collective() && !actor_per_op_;
  }
  /// The heads that fire on messages (every head but the sources, those fired inline and
  /// those counted by the step's thread): those get an actor.
  bool has_actor(int id) const {
    const step_node& n = nodes_[static_cast<std::size_t>(id)];
    return n.head == n.id && n.dependencies > 0 && !fires_inline(id) && !n.counted_by_step_thread;
  }
  std::uint64_t collectives_per_step() const { return collectives_; }

  /// The nodes whose work run() waits for (step_node::awaited).
  int awaited_count() const { return awaited_count_; }
  /// Whether a step's tail may overlap the next step: false where a collective touches a
  /// variable the host writes before each step (see step_node::awaited).
  bool overlappable() const { return overlappable_; }

  /// Sets every reference count of `in` to its full value and its awaited count; call
  /// before each step.
  void reset_counts(step_inputs& in) const;

  /// Drops one reference of each count of `in` that `node` holds, freeing tensors that
  /// reach zero. Called from the stream that ran the node's work, after it ran: the release
  /// is stream-ordered.
  void release(const step_node& node, step_inputs& in) const;

  /// Node `id`'s live state (stall reports).
  node_live& live(int id) const { return live_[static_cast<std::size_t>(id)]; }

 private:
  ssa_graph graph_;
  std::vector<step_node> nodes_;
  std::vector<int> sources_;
  std::uint64_t collectives_ = 0;
  bool actor_per_op_ = false;

  /// Sets every node's head and the heads' followers (see the class comment).
  void group_firings();
  /// Every node's producers (those with an edge to it) into `producers`, and a topological
  /// order of the nodes (Kahn's, lowest id first among the ready: the program's order where
  /// it is free to choose).
  std::vector<int> topological_order(std::vector<std::vector<int>>& producers) const;
  /// Marks the heads whose every message comes from the sources' groups or from collectives
  /// marked before them (step_node::counted_by_step_thread; see the .cpp).
  void count_on_step_thread();
  /// Drops each edge u -> v that another path from u to v implies, and repeats of an edge,
  /// and lowers v's dependencies to match (see the .cpp for why that is sound).
  void drop_implied_edges(int places);
  std::vector<tensor*> counted_;             // the tensor each count guards
  std::vector<int> full_counts_;
  int awaited_count_ = 0;
  bool overlappable_ = true;
  std::unique_ptr<node_live[]> live_; // by node id
};

} // namespace pe

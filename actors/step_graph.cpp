#include "actors/step_graph.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "graph/attributes.hpp"
#include "graph/program_info.hpp"
#include "graph/validate.hpp"

namespace pe {

// --- step_inputs -----------------------------------------------------------------------

void step_inputs::fail(const std::string& message) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!error_) error_ = message;
}

std::optional<std::string> step_inputs::first_error() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return error_;
}

void step_inputs::reset(std::size_t fetches, std::size_t places) {
  std::lock_guard<std::mutex> guard(mutex_);
  error_.reset();
  fetched.assign(fetches, std::vector<tensor>(places));
  fetch_sources.assign(capturing ? fetches : 0, std::vector<tensor>(places));
}

// --- step_node -------------------------------------------------------------------------

void step_node::run(step_inputs& in) {
  switch (what) {
    case op_handle::kind::computation:
      // Here, on the stream, not by the host before the step: the host may be setting up the
      // next step while this one's tail runs.
      op_->set_steps_before(in.steps_before);
      op_->run();
      return;
    case op_handle::kind::scale_loss_grad: {
      if (in.loss_scale.empty()) return; // customized: the user fed loss@GRAD
      tensor& t = *slots_[0][0];
      t.resize(dtype::fp32, shape_);
      std::fill_n(t.data<float>(), t.numel(), in.loss_scale[static_cast<std::size_t>(place)]);
      return;
    }
    case op_handle::kind::fetch: {
      const tensor& t = *slots_[0][0];
      if (!t.initialized()) throw error(label + ": the variable has no value");
      in.fetched[static_cast<std::size_t>(fetch_index_)][static_cast<std::size_t>(place)] =
          t.clone();
      return;
    }
    default:
      throw error(label + ": a collective cannot run as a single kernel");
  }
}

bool step_node::is_transfer(const device& d) const {
  return d.where().type != place::kind::cpu &&
         (what == op_handle::kind::scale_loss_grad || what == op_handle::kind::fetch);
}

stream::task step_node::transfer_work(device& d, stream& on, step_inputs& in) {
  const auto at = [](auto& per_place, int p) -> auto& { return per_place[static_cast<std::size_t>(p)]; };
  if (what == op_handle::kind::fetch) {
    if (in.capturing) // the tensor itself (its device buffer): copied once the replay ran
      return [&source = at(in.fetch_sources[static_cast<std::size_t>(fetch_index_)], place),
              &var = *slots_[0][0], label = label] {
        if (!var.initialized()) throw error(label + ": the variable has no value");
        source = var;
      };
    // An uninitialised host tensor takes the fetched value from the device.
    tensor& out = at(in.fetched[static_cast<std::size_t>(fetch_index_)], place);
    out = tensor();
    return d.copy_work(on, out, *slots_[0][0]);
  }
  if (in.loss_scale.empty()) return [] {}; // customized: the user fed loss@GRAD
  return d.fill_work(on, *slots_[0][0], shape_, at(in.loss_scale, place));
}

collective_call step_node::call() const {
  collective_call c;
  c.what = what == op_handle::kind::all_reduce ? collective_call::kind::all_reduce
           : what == op_handle::kind::reduce   ? collective_call::kind::reduce
           : what == op_handle::kind::all_gather ? collective_call::kind::all_gather
                                               : collective_call::kind::broadcast;
  c.root = root;
  c.sequence = sequence;
  c.label = label;
  c.exchange = exchange;
  return c;
}

// --- step_graph ------------------------------------------------------------------------

namespace {

/// fill_constant's shape attribute (LONGS, or INTS in Paddle 1.x programs).
shape_t fill_shape(const proto::OpDesc& fill) {
  const auto* a = find_attr(fill, "shape");
  if (a == nullptr) return {};
  attribute value = from_proto(*a);
  if (auto* longs = std::get_if<std::vector<std::int64_t>>(&value)) return *longs;
  if (auto* ints = std::get_if<std::vector<std::int32_t>>(&value)) return {ints->begin(), ints->end()};
  throw error("fill_constant: attribute 'shape' is neither INTS nor LONGS");
}

} // namespace

step_graph::step_graph(const proto::ProgramDesc& main, ssa_graph graph, std::vector<scope*> scopes,
                       const std::vector<device*>& devices, bool check_nan_inf, bool actor_per_op)
    : graph_(std::move(graph)), actor_per_op_(actor_per_op) {
  const proto::BlockDesc& block = main.blocks(0);
  std::vector<std::string> place_names;
  for (const device* d : devices) place_names.push_back(to_string(d->where()));
  std::set<std::string, std::less<>> persistable;
  // Kept across steps; the other variables (SELECTED_ROWS ones too) are freed after their
  // last reader.
  for (const auto& v : block.vars())
    if (v.persistable() || !is_tensor_var(v)) persistable.insert(v.name());
  // What the host writes before each step: the feeds, and the loss gradient where the user
  // feeds it (its scale node writes it otherwise; either way its readers come early).
  std::set<std::string, std::less<>> host_written;
  for (const data_input& input : data_inputs(main)) host_written.insert(input.name);
  for (const op_handle& h : graph_.ops)
    if (h.what == op_handle::kind::scale_loss_grad)
      host_written.insert(output_args(block.ops(h.op_index), "Out").at(0));

  std::map<std::pair<int, std::string>, int> count_index;
  nodes_.resize(graph_.ops.size());
  live_ = std::make_unique<node_live[]>(graph_.ops.size());
  for (const op_handle& h : graph_.ops) {
    step_node& n = nodes_[static_cast<std::size_t>(h.id)];
    n.id = h.id;
    n.what = h.what;
    n.place = h.place;
    n.root = h.root;
    n.exchange = h.exchange;
    n.type = op_type_name(h, main);
    n.label = describe(h, main, place_names);
    n.events_.resize(devices.size());
    auto slot = [&](int p, const std::string& name) {
      return &scopes[static_cast<std::size_t>(p)]->var(name);
    };
    switch (h.what) {
      case op_handle::kind::computation: {
        device& d = *devices[static_cast<std::size_t>(h.place)];
        n.op_.emplace(main, 0, h.op_index, *scopes[static_cast<std::size_t>(h.place)], d.where(),
                      check_nan_inf, d.kernel_kind());
        n.op_->bind(&d, &d.get_stream(stream_kind::compute));
        break;
      }
      case op_handle::kind::scale_loss_grad: {
        const proto::OpDesc& fill = block.ops(h.op_index);
        n.slots_ = {{slot(h.place, output_args(fill, "Out").at(0))}};
        n.shape_ = fill_shape(fill);
        break;
      }
      case op_handle::kind::fetch:
        n.slots_ = {{slot(h.place, h.vars.at(0))}};
        n.fetch_index_ = h.fetch_index;
        n.runs_on = stream_kind::copy;
        break;
      default:
        n.runs_on = stream_kind::communication;
        n.sequence = collectives_++;
        for (int p = 0; p < graph_.num_places; ++p) {
          std::vector<tensor*> vars;
          for (const auto& name : h.vars) vars.push_back(slot(p, name));
          n.slots_.push_back(std::move(vars));
        }
    }
    for (std::size_t p = 0; p < devices.size(); ++p)
      if (n.is_collective() || static_cast<int>(p) == h.place) n.events_[p] = devices[p]->make_event();
    for (int v : h.inputs)
      if (graph_.vars[static_cast<std::size_t>(v)].generated_op >= 0) ++n.dependencies;
    for (int v : h.outputs) {
      const var_handle& var = graph_.vars[static_cast<std::size_t>(v)];
      for (int op : var.pending_ops) n.successors.push_back({op, var.place});
    }

    // Reference counts: one per (place, temporary name) this node touches.
    std::set<int> held;
    auto touch = [&](int var_id) {
      const var_handle& var = graph_.vars[static_cast<std::size_t>(var_id)];
      if (var.dummy || persistable.contains(var.name)) return;
      auto [it, added] = count_index.try_emplace({var.place, var.name}, static_cast<int>(counted_.size()));
      if (added) {
        counted_.push_back(slot(var.place, var.name));
        full_counts_.push_back(0);
      }
      if (held.insert(it->second).second) ++full_counts_[static_cast<std::size_t>(it->second)];
    };
    for (int v : h.inputs) touch(v);
    for (int v : h.outputs) touch(v);
    n.releases.assign(held.begin(), held.end());
    bool touches_host_written = false;
    for (const auto* vars : {&h.inputs, &h.outputs})
      for (int v : *vars)
        if (host_written.contains(graph_.vars[static_cast<std::size_t>(v)].name)) touches_host_written = true;
    // A collective's parts end on several streams, not in one task that could count down:
    // one that touches a feed keeps every step whole.
    if (n.is_collective()) overlappable_ = overlappable_ && !touches_host_written;
    else n.awaited = touches_host_written || h.what == op_handle::kind::fetch;
    if (n.awaited) ++awaited_count_;
  }
  // Launch order: each collective waits (on the host) for the launch of the one before it,
  // so every place issues them in sequence whatever the schedule; otherwise two places
  // could each start a different collective and wait for the other forever.
  int previous = -1;
  for (auto& n : nodes_) {
    if (!n.is_collective()) continue;
    if (previous >= 0) {
      nodes_[static_cast<std::size_t>(previous)].successors.push_back({n.id, -1});
      ++n.dependencies;
    }
    previous = n.id;
  }
  for (auto& n : nodes_) n.head = n.id;
  if (!actor_per_op) {
    // Twice: a group's firing enqueues its nodes in order on one stream, so each member's
    // work is done before the next one's starts, an order that implies more edges (a
    // learning rate computed early in a place's first group, read by an optimizer op that
    // also waits for a gradient computed later in it). The order becomes edges between
    // consecutive members; the second grouping keeps every member with its group (its
    // producers are a subset of what they were, all in that group), in the same order.
    const int places = static_cast<int>(devices.size());
    drop_implied_edges(places);
    group_firings();
    for (auto& n : nodes_) {
      int previous = n.id;
      for (int f : n.followers) {
        nodes_[static_cast<std::size_t>(previous)].successors.push_back({f, n.place});
        ++nodes_[static_cast<std::size_t>(f)].dependencies;
        previous = f;
      }
    }
    for (auto& n : nodes_) {
      n.head = n.id;
      n.followers.clear();
    }
    drop_implied_edges(places);
    group_firings();
  }
  // A record after every node's work cost most of a small op's host time on a GPU place (a
  // cudaEventRecord each; measured on an H100): only the nodes read on another stream record.
  for (auto& n : nodes_) {
    n.records_.assign(devices.size(), 0);
    for (const step_node::edge& e : n.successors) {
      if (e.place < 0) continue; // a launch-order edge carries no event
      device& d = *devices[static_cast<std::size_t>(e.place)];
      const step_node& reader = nodes_[static_cast<std::size_t>(e.to)];
      if (&d.get_stream(reader.runs_on) != &d.get_stream(n.runs_on)) n.records_[static_cast<std::size_t>(e.place)] = 1;
    }
  }
  for (const auto& n : nodes_)
    if (n.dependencies == 0 && n.head == n.id) sources_.push_back(n.id);
  if (!actor_per_op) count_on_step_thread();
}

void step_graph::drop_implied_edges(int places) {
  // Why it is sound: an edge u -> v makes v's work start after u's work on the edge's place
  // has finished (v's stream waits on u's event, or runs after it in stream order, or v
  // fires once the event is done), and v fire after u fired. Both are transitive, so a
  // second path from u to v keeps both promises without the edge: v just waits for the
  // path's last node instead. A collective is a node per place here (a fact): its part on
  // place p waits only for its inputs on p, and its readers on p only for that part, so a
  // path through a collective implies nothing about another place's part. A launch-order
  // edge orders the parts of two collectives place by place (one communication stream per
  // place); those edges stay (they carry the launch sequence).
  std::vector<int> first(nodes_.size());
  std::size_t facts = 0;
  for (const step_node& n : nodes_) {
    first[static_cast<std::size_t>(n.id)] = static_cast<int>(facts);
    facts += n.is_collective() ? static_cast<std::size_t>(places) : 1;
  }
  // The reachability sets take facts^2 bits: above this (32 MiB), keep every edge.
  constexpr std::size_t max_facts = 16384;
  if (facts > max_facts) return;
  const auto fact = [&](int id, int place) {
    const step_node& n = nodes_[static_cast<std::size_t>(id)];
    return static_cast<std::size_t>(first[static_cast<std::size_t>(id)] + (n.is_collective() ? place : 0));
  };
  std::vector<std::vector<std::size_t>> out(facts);
  std::vector<int> waiting(facts, 0);
  for (const step_node& n : nodes_)
    for (const step_node::edge& e : n.successors)
      for (int p = e.place < 0 ? 0 : e.place; p < (e.place < 0 ? places : e.place + 1); ++p)
        out[fact(n.id, p)].push_back(fact(e.to, p));
  for (auto& o : out) {
    std::sort(o.begin(), o.end());
    o.erase(std::unique(o.begin(), o.end()), o.end());
    for (std::size_t t : o) ++waiting[t];
  }
  // reach[f]: every fact after f on some path, filled in reverse topological order.
  std::vector<std::size_t> order;
  order.reserve(facts);
  for (std::size_t f = 0; f < facts; ++f)
    if (waiting[f] == 0) order.push_back(f);
  for (std::size_t i = 0; i < order.size(); ++i)
    for (std::size_t t : out[order[i]])
      if (--waiting[t] == 0) order.push_back(t);
  if (order.size() != facts) return; // not a DAG: leave it to validation elsewhere
  const std::size_t words = (facts + 63) / 64;
  std::vector<std::uint64_t> reach(facts * words, 0);
  const auto reaches = [&](std::size_t from, std::size_t to) {
    return (reach[from * words + to / 64] >> (to % 64) & 1) != 0;
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    std::uint64_t* mine = &reach[*it * words];
    for (std::size_t t : out[*it]) {
      mine[t / 64] |= std::uint64_t{1} << (t % 64);
      const std::uint64_t* theirs = &reach[t * words];
      for (std::size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
    }
  }
  const auto implied = [&](std::size_t from, std::size_t to) {
    return std::any_of(out[from].begin(), out[from].end(),
                       [&](std::size_t other) { return other != to && reaches(other, to); });
  };
  for (step_node& n : nodes_) {
    std::vector<step_node::edge> kept;
    for (const step_node::edge& e : n.successors) {
      const bool repeat = std::any_of(kept.begin(), kept.end(), [&](const step_node::edge& k) {
        return k.to == e.to && k.place == e.place;
      });
      if (e.place >= 0 && (repeat || implied(fact(n.id, e.place), fact(e.to, e.place)))) {
        --nodes_[static_cast<std::size_t>(e.to)].dependencies;
        continue;
      }
      kept.push_back(e);
    }
    n.successors = std::move(kept);
  }
}

void step_graph::count_on_step_thread() {
  // Which groups fire on the thread running the step, in fire_sources: the sources' groups,
  // and a collective all of whose messages come from such groups (the step's thread then
  // brings its last message and fires it; a collective never waits for its inputs on the
  // host). A head hearing only from those groups needs no actor: that thread counts its
  // messages (no other thread sends it any), then fires it as its actor would. Why: on the
  // programs that are mostly one group per place (the MLPs, the ResNet), every message of a
  // step went to one CAF worker, which woke for them and took a core from a place's device
  // thread in the step's first microseconds (traces of the in-graph-schedule MLP on 2
  // places: a device thread off its core for 64 us of a 194 us step).
  std::vector<std::vector<int>> producers;
  const std::vector<int> order = topological_order(producers);
  std::vector<char> on_step_thread(nodes_.size(), 0);
  for (int s : sources_) on_step_thread[static_cast<std::size_t>(s)] = 1;
  for (int id : order) {
    step_node& n = nodes_[static_cast<std::size_t>(id)];
    if (n.head != n.id || n.dependencies == 0 || fires_inline(n.id)) continue;
    const auto& from = producers[static_cast<std::size_t>(n.id)];
    n.counted_by_step_thread = std::all_of(from.begin(), from.end(), [&](int p) {
      return on_step_thread[static_cast<std::size_t>(nodes_[static_cast<std::size_t>(p)].head)] != 0;
    });
    if (n.counted_by_step_thread && n.is_collective()) on_step_thread[static_cast<std::size_t>(n.id)] = 1;
  }
}

std::vector<int> step_graph::topological_order(std::vector<std::vector<int>>& producers) const {
  producers.assign(nodes_.size(), {});
  std::vector<int> waiting(nodes_.size(), 0);
  for (const step_node& n : nodes_)
    for (const step_node::edge& e : n.successors) {
      producers[static_cast<std::size_t>(e.to)].push_back(n.id);
      ++waiting[static_cast<std::size_t>(e.to)];
    }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (const step_node& n : nodes_)
    if (waiting[static_cast<std::size_t>(n.id)] == 0) ready.push(n.id);
  std::vector<int> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    order.push_back(ready.top());
    ready.pop();
    for (const step_node::edge& e : nodes_[static_cast<std::size_t>(order.back())].successors)
      if (--waiting[static_cast<std::size_t>(e.to)] == 0) ready.push(e.to);
  }
  return order;
}

void step_graph::group_firings() {
  std::vector<std::vector<int>> producers;
  const std::vector<int> order = topological_order(producers);
  // The first source on each (place, stream): the later ones there join its group, as they
  // all fire when the step starts anyway.
  std::map<std::pair<int, stream_kind>, int> first_source;
  for (int id : order) {
    step_node& n = nodes_[static_cast<std::size_t>(id)];
    if (n.is_collective()) continue;
    const std::vector<int>& from = producers[static_cast<std::size_t>(n.id)];
    if (from.empty()) {
      auto [it, first] = first_source.try_emplace({n.place, n.runs_on}, n.id);
      if (!first) {
        n.head = it->second;
        nodes_[static_cast<std::size_t>(n.head)].followers.push_back(n.id);
      }
      continue;
    }
    // Its producers are placed already (topological order): all in one group?
    const int head = nodes_[static_cast<std::size_t>(from.front())].head;
    const step_node& h = nodes_[static_cast<std::size_t>(head)];
    if (h.is_collective() || h.place != n.place || h.runs_on != n.runs_on) continue;
    if (!std::all_of(from.begin(), from.end(),
                     [&](int p) { return nodes_[static_cast<std::size_t>(p)].head == head; }))
      continue;
    n.head = head;
    nodes_[static_cast<std::size_t>(head)].followers.push_back(n.id);
  }
}

void step_graph::reset_counts(step_inputs& in) const {
  if (in.counts.size() != full_counts_.size()) in.counts = std::vector<std::atomic<int>>(full_counts_.size());
  for (std::size_t i = 0; i < full_counts_.size(); ++i)
    in.counts[i].store(full_counts_[i], std::memory_order_relaxed);
  in.awaited_left.store(awaited_count_, std::memory_order_relaxed);
}

void step_graph::release(const step_node& node, step_inputs& in) const {
  for (int c : node.releases)
    if (in.counts[static_cast<std::size_t>(c)].fetch_sub(1, std::memory_order_acq_rel) == 1)
      *counted_[static_cast<std::size_t>(c)] = tensor();
}

} // namespace pe

#include "actors/step_graph.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "graph/attributes.hpp"
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
    : graph_(std::move(graph)) {
  const proto::BlockDesc& block = main.blocks(0);
  std::vector<std::string> place_names;
  for (const device* d : devices) place_names.push_back(to_string(d->where()));
  std::set<std::string, std::less<>> persistable;
  // Kept across steps; the other variables (SELECTED_ROWS ones too) are freed after their
  // last reader.
  for (const auto& v : block.vars())
    if (v.persistable() || !is_tensor_var(v)) persistable.insert(v.name());

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
  for (auto& n : nodes_) n.head = n.id;
  if (!actor_per_op) group_firings();
  for (const auto& n : nodes_)
    if (n.dependencies == 0 && n.head == n.id) sources_.push_back(n.id);
  counts_ = std::make_unique<std::atomic<int>[]>(full_counts_.size());
  reset_counts();
}

void step_graph::group_firings() {
  // Every node's producers (those with an edge to it), and a topological order (Kahn's,
  // lowest id first among the ready: the program's order where it is free to choose).
  std::vector<std::vector<int>> producers(nodes_.size());
  std::vector<int> waiting(nodes_.size(), 0);
  for (const step_node& n : nodes_)
    for (const step_node::edge& e : n.successors) {
      producers[static_cast<std::size_t>(e.to)].push_back(n.id);
      ++waiting[static_cast<std::size_t>(e.to)];
    }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (const step_node& n : nodes_)
    if (waiting[static_cast<std::size_t>(n.id)] == 0) ready.push(n.id);
  // The first source on each (place, stream): the later ones there join its group, as they
  // all fire when the step starts anyway.
  std::map<std::pair<int, stream_kind>, int> first_source;
  while (!ready.empty()) {
    step_node& n = nodes_[static_cast<std::size_t>(ready.top())];
    ready.pop();
    for (const step_node::edge& e : n.successors)
      if (--waiting[static_cast<std::size_t>(e.to)] == 0) ready.push(e.to);
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

void step_graph::set_steps_before(std::uint64_t steps) {
  for (step_node& n : nodes_)
    if (n.op_) n.op_->set_steps_before(steps);
}

void step_graph::reset_counts() {
  for (std::size_t i = 0; i < full_counts_.size(); ++i)
    counts_[i].store(full_counts_[i], std::memory_order_relaxed);
}

void step_graph::release(const step_node& node) {
  for (int c : node.releases)
    if (counts_[static_cast<std::size_t>(c)].fetch_sub(1, std::memory_order_acq_rel) == 1)
      *counted_[static_cast<std::size_t>(c)] = tensor();
}

} // namespace pe

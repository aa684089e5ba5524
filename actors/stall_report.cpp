#include "actors/stall_report.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "actors/step_graph.hpp"
#include "collectives/communicator.hpp"
#include "devices/device.hpp"

namespace pe {

namespace {

/// At most this many unfinished ops are listed one by one (a stalled step of a large model
/// can leave thousands); the chain is found over all of them.
constexpr std::size_t max_listed_ops = 60;

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

/// A report's first line: what it is, the step, how long without progress, the process.
std::string heading(const stall_view& v, double step_s) {
  std::string t = std::string(v.on_demand ? "progress report" : "stall report") + ": step " + std::to_string(v.step) +
                  ", no progress for " + seconds(v.idle_s) + " (the step has run for " + seconds(step_s) + ")";
  if (v.num_processes > 1)
    t += ", process rank " + std::to_string(v.process_rank) + " of " + std::to_string(v.num_processes);
  return t + "\n";
}

/// Sets the root cause (the chain's last link) and ends the text with the chain and it.
void end_with_chain(stall_report& r) {
  r.root_cause = r.chain.back();
  r.text += "chain: ";
  for (std::size_t k = 0; k < r.chain.size(); ++k) r.text += (k > 0 ? "; " : "") + r.chain[k];
  r.text += std::string(r.on_demand ? "\nfurthest wait: " : "\nroot cause: ") + r.root_cause + "\n";
}

/// Reads the live state of a step's nodes and finds who waits for whom.
class stall_reader {
 public:
  explicit stall_reader(const stall_view& v) : v_(v), nodes_(const_cast<step_graph*>(v.graph)->nodes()) {
    if (v.comm != nullptr) status_ = v.comm->status();
  }

  stall_report make() {
    stall_report r;
    r.step = v_.step;
    r.idle_s = v_.idle_s;
    r.step_s = static_cast<double>(v_.now_ns - v_.step_start_ns) / 1e9;
    r.on_demand = v_.on_demand;
    r.made_ns = v_.now_ns;
    std::string& t = r.text;
    t += heading(v_, r.step_s);
    if (v_.first_error) t += "first error of the step: " + *v_.first_error + "\n";

    std::size_t unfinished = 0;
    t += "ops not finished:\n";
    for (const step_node& n : nodes_) {
      if (!unfinished_node(n.id)) continue;
      if (++unfinished > max_listed_ops) continue;
      t += "  " + name(n) + ": " + state(n) + "\n";
      if (!fired(n.id)) {
        for (const auto& [var, producer] : missing_inputs(n))
          t += "    misses " + var + " from " + name(nodes_[static_cast<std::size_t>(producer)]) + " (" +
               state(nodes_[static_cast<std::size_t>(producer)]) + ")\n";
      }
    }
    if (unfinished == 0) t += "  none (every op's work finished; the step waits for its streams to drain)\n";
    if (unfinished > max_listed_ops)
      t += "  ... and " + std::to_string(unfinished - max_listed_ops) + " more\n";

    t += "collectives under way:\n";
    if (!status_) t += "  (this communicator does not report its state)\n";
    else if (status_->pending.empty()) t += "  none\n";
    else
      for (const collective_status& c : status_->pending) t += "  " + describe(c) + "\n";

    t += "streams:\n";
    for (std::size_t p = 0; p < v_.devices.size(); ++p)
      for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy}) {
        const auto counts = v_.devices[p]->get_stream(kind).counts();
        t += "  " + v_.place_names[p] + " " + to_string(kind) + ": " +
             std::to_string(counts.enqueued - std::min(counts.enqueued, counts.completed)) + " queued (" +
             std::to_string(counts.completed) + " done)\n";
      }

    const int start = last_unfinished();
    if (start >= 0) follow(start, r.chain);
    else r.chain.push_back("every op of step " + std::to_string(v_.step) +
                           " finished its work: the step waits for its streams (see the queues above)");
    end_with_chain(r);
    return r;
  }

 private:
  const node_live& live(int id) const { return v_.graph->live(id); }
  bool fired(int id) const { return live(id).fired.load(std::memory_order_acquire) == v_.step; }
  bool finished(int id) const { return live(id).finished.load(std::memory_order_acquire) == v_.step; }
  bool unfinished_node(int id) const { return !fired(id) || !finished(id); }

  std::string place_name(int p) const {
    return p >= 0 && static_cast<std::size_t>(p) < v_.place_names.size() ? v_.place_names[static_cast<std::size_t>(p)]
                                                                          : "place " + std::to_string(p);
  }

  std::uint64_t sequence(const step_node& n) const { return v_.sequence_base + n.sequence; }

  /// "op #3 (mul) on cpu:1", "all_reduce #12 (fc_0.w_0@GRAD)", "broadcast #14 (w) from cpu:0".
  std::string name(const step_node& n) const {
    if (!n.is_collective()) return n.label;
    const bool typed = n.label.compare(0, n.type.size(), n.type) == 0;
    return n.type + " #" + std::to_string(sequence(n)) + " " + (typed ? n.label.substr(n.type.size()) : "(" + n.label + ")");
  }

  static std::string items(std::uint64_t n) { return std::to_string(n) + (n == 1 ? " item" : " items"); }

  const collective_status* status_of(const step_node& n) const {
    if (!status_) return nullptr;
    for (const collective_status& c : status_->pending)
      if (c.sequence == sequence(n)) return &c;
    return nullptr;
  }

  std::vector<int> missing_ranks(const collective_status& c) const {
    std::vector<int> out;
    for (int r = 0; r < static_cast<int>(v_.place_names.size()); ++r)
      if (!std::binary_search(c.joined.begin(), c.joined.end(), r)) out.push_back(r);
    return out;
  }

  std::string next_of(int rank) const {
    if (!status_ || static_cast<std::size_t>(rank) >= status_->next_sequence.size()) return "";
    return " (at #" + std::to_string(status_->next_sequence[static_cast<std::size_t>(rank)]) + ")";
  }

  /// "joined cpu:1 (at #7); missing cpu:0 (at #6); 0 finished; first joined 2.00 s ago":
  /// who joined, who did not, and the sequence number each place has reached.
  std::string ranks_of(const collective_status& c) const {
    std::string joined, missing;
    for (int r : c.joined) joined += (joined.empty() ? "" : ", ") + place_name(r) + next_of(r);
    for (int r : missing_ranks(c)) missing += (missing.empty() ? "" : ", ") + place_name(r) + next_of(r);
    return "joined " + (joined.empty() ? std::string("none") : joined) + "; missing " +
           (missing.empty() ? std::string("none") : missing) + "; " + std::to_string(c.finished.size()) +
           " finished; first joined " + seconds(static_cast<double>(v_.now_ns - c.first_join_ns) / 1e9) + " ago";
  }

  /// "process rank 1" / "process ranks 1, 2".
  static std::string processes(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "process rank " : "process ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
    return out;
  }

  std::string describe(const collective_status& c) const {
    return "#" + std::to_string(c.sequence) + " " + c.label + ": " + ranks_of(c) +
           (c.awaited_processes.empty() ? "" : "; waits for the data of " + processes(c.awaited_processes));
  }

  /// Where a node's work stands, in words.
  std::string state(const step_node& n) const {
    const node_live& l = live(n.id);
    if (!fired(n.id)) return "not fired";
    if (l.failed.load(std::memory_order_acquire) == v_.step)
      return "failed" + (v_.first_error ? ": " + *v_.first_error : std::string());
    if (finished(n.id)) return "done";
    if (n.is_collective()) {
      if (const collective_status* c = status_of(n)) return "launched; " + ranks_of(*c);
      return status_ ? "launched; no place has joined it yet" : "launched on every place, not finished";
    }
    const std::string where = "the " + to_string(n.runs_on) + " stream of " + place_name(n.place);
    if (l.started.load(std::memory_order_acquire) == v_.step)
      return "running for " + seconds(static_cast<double>(v_.now_ns - l.started_ns.load(std::memory_order_relaxed)) / 1e9) +
             " on " + where;
    return "queued on " + where + " behind " + items(ahead(n));
  }

  /// How many items of its stream run before a queued node's work.
  std::uint64_t ahead(const step_node& n) const {
    const auto counts = v_.devices[static_cast<std::size_t>(n.place)]->get_stream(n.runs_on).counts();
    const std::uint64_t ticket = live(n.id).ticket.load(std::memory_order_relaxed);
    return ticket > counts.completed + 1 ? ticket - counts.completed - 1 : 0;
  }

  /// The input versions of `n` (on place `on`, or every place for -1) whose producers have
  /// not fired (`unfired`) or not finished: (var name@version on place, producer id).
  std::vector<std::pair<std::string, int>> inputs_waiting(const step_node& n, int on, bool unfired) const {
    std::vector<std::pair<std::string, int>> out;
    const ssa_graph& g = v_.graph->graph();
    for (int vid : g.ops[static_cast<std::size_t>(n.id)].inputs) {
      const var_handle& var = g.vars[static_cast<std::size_t>(vid)];
      if (var.generated_op < 0 || (on >= 0 && var.place != on)) continue;
      const bool waiting = unfired ? !fired(var.generated_op) : unfinished_node(var.generated_op);
      if (waiting) out.emplace_back(version_name(var) + " on " + place_name(var.place), var.generated_op);
    }
    return out;
  }

  std::vector<std::pair<std::string, int>> missing_inputs(const step_node& n) const {
    return inputs_waiting(n, -1, true);
  }

  /// Where the chain starts: the first collective that some place joined and another did
  /// not (every place waits there, and the chain then says for whom), else the last
  /// unfinished op in topological order (the end of what is stuck).
  int last_unfinished() const {
    if (status_)
      for (const collective_status& c : status_->pending) {
        if (missing_ranks(c).empty() && c.awaited_processes.empty()) continue;
        for (const step_node& n : nodes_)
          if (n.is_collective() && sequence(n) == c.sequence && unfinished_node(n.id)) return n.id;
      }
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it)
      if (unfinished_node(it->id)) return it->id;
    return -1;
  }

  /// The node whose work runs (or waits at the head) on (place, stream) this step.
  int running_on(int place, stream_kind kind) const {
    int best = -1;
    std::uint64_t best_ticket = ~std::uint64_t{0};
    for (const step_node& n : nodes_) {
      if (n.is_collective() || n.place != place || n.runs_on != kind || !fired(n.id) || finished(n.id)) continue;
      if (live(n.id).started.load(std::memory_order_acquire) == v_.step) return n.id;
      const std::uint64_t ticket = live(n.id).ticket.load(std::memory_order_relaxed);
      if (ticket < best_ticket) best = n.id, best_ticket = ticket;
    }
    return best;
  }

  /// Appends the links from node `id` back to its root cause.
  void follow(int id, std::vector<std::string>& chain) {
    std::set<int> seen;
    for (;;) {
      if (!seen.insert(id).second) {
        chain.push_back("... (the chain returns to " + name(nodes_[static_cast<std::size_t>(id)]) + ")");
        return;
      }
      const step_node& n = nodes_[static_cast<std::size_t>(id)];
      const node_live& l = live(id);
      if (!fired(id)) {
        const auto missing = missing_inputs(n);
        if (missing.empty()) {
          chain.push_back(name(n) + " never fired, though every producer of its inputs fired (its actor is "
                                    "blocked, or their messages are still in flight)");
          return;
        }
        chain.push_back(name(n) + " never fired: it waits for " + missing.front().first + " from " +
                        name(nodes_[static_cast<std::size_t>(missing.front().second)]));
        id = missing.front().second;
        continue;
      }
      if (l.failed.load(std::memory_order_acquire) == v_.step) {
        chain.push_back(name(n) + " failed" + (v_.first_error ? ": " + *v_.first_error : std::string()));
        return;
      }
      if (n.is_collective()) {
        const collective_status* c = status_of(n);
        const std::vector<int> missing = c != nullptr ? missing_ranks(*c) : std::vector<int>{};
        if (c != nullptr && missing.empty()) {
          const std::string whom = !c->awaited_processes.empty()
                                       ? ": it waits for the data of " + processes(c->awaited_processes) +
                                             " (stopped, slow, or stuck before this collective)"
                                       : v_.num_processes > 1 ? ": it waits for the other processes" : "";
          chain.push_back(name(n) + " has every local place joined and has not finished" + whom);
          return;
        }
        const int q = !missing.empty() ? missing.front() : -1;
        std::string link = name(n);
        if (c != nullptr) {
          link += " on " + place_name(c->joined.empty() ? 0 : c->joined.front()) + " waits for " + place_name(q) + next_of(q);
        } else {
          link += " was launched and has not finished";
        }
        const auto waiting = inputs_waiting(n, q, false);
        if (!waiting.empty()) {
          chain.push_back(link + "; " + (q >= 0 ? place_name(q) + " has not joined: it waits for " : "it waits for ") +
                          waiting.front().first + " from " +
                          name(nodes_[static_cast<std::size_t>(waiting.front().second)]));
          id = waiting.front().second;
          continue;
        }
        // Nothing it reads is missing: an earlier collective holds the communication stream.
        int earlier = -1;
        for (const step_node& m : nodes_)
          if (m.is_collective() && m.sequence < n.sequence && unfinished_node(m.id)) earlier = m.id;
        if (earlier >= 0) {
          chain.push_back(link + "; it is queued behind " + name(nodes_[static_cast<std::size_t>(earlier)]));
          id = earlier;
          continue;
        }
        chain.push_back(link + (q >= 0 ? "; " + place_name(q) + " never joined, though its inputs are done: the "
                                                "communication stream of " + place_name(q) + " holds " +
                                                items(queued(q, stream_kind::communication))
                                          : std::string("; this backend does not say which rank is missing")));
        return;
      }
      const std::string where = "the " + to_string(n.runs_on) + " stream of " + place_name(n.place);
      if (l.started.load(std::memory_order_acquire) == v_.step) {
        chain.push_back(name(n) + " has not finished: running for " +
                        seconds(static_cast<double>(v_.now_ns - l.started_ns.load(std::memory_order_relaxed)) / 1e9) +
                        " on " + where);
        return;
      }
      // Queued: behind the work its stream runs now (stream order), or, where no op of
      // this step runs there, behind a wait for an input written elsewhere.
      const int head = running_on(n.place, n.runs_on);
      const std::string queued_link = name(n) + " is queued on " + where + " behind " + items(ahead(n));
      if (head >= 0 && head != id && live(head).started.load(std::memory_order_acquire) == v_.step) {
        chain.push_back(queued_link + ", the first of which is " + name(nodes_[static_cast<std::size_t>(head)]));
        id = head;
        continue;
      }
      const auto waiting = inputs_waiting(n, -1, false);
      if (!waiting.empty()) {
        chain.push_back(name(n) + " waits for " + waiting.front().first + " from " +
                        name(nodes_[static_cast<std::size_t>(waiting.front().second)]));
        id = waiting.front().second;
        continue;
      }
      if (head >= 0 && head != id) {
        chain.push_back(queued_link);
        id = head;
        continue;
      }
      chain.push_back(queued_link + ", none of them an op of this step that is running");
      return;
    }
  }

  std::uint64_t queued(int place, stream_kind kind) const {
    const auto counts = v_.devices[static_cast<std::size_t>(place)]->get_stream(kind).counts();
    return counts.enqueued - std::min(counts.enqueued, counts.completed);
  }

  const stall_view& v_;
  std::vector<step_node>& nodes_;
  std::optional<communicator_status> status_;
};

} // namespace

stall_report make_stall_report(const stall_view& view) {
  return stall_reader(view).make();
}

stall_report make_after_step_report(const stall_view& v, const std::string& doing, std::string root_cause) {
  stall_report r;
  r.step = v.step;
  r.idle_s = v.idle_s;
  r.step_s = static_cast<double>(v.now_ns - v.step_start_ns) / 1e9;
  r.on_demand = v.on_demand;
  r.made_ns = v.now_ns;
  r.text = heading(v, r.step_s) + doing + "\n";
  r.chain = {std::move(root_cause)};
  end_with_chain(r);
  return r;
}

} // namespace pe

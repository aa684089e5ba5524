#include "actors/hazard_check.hpp"

#include <map>
#include <set>

namespace pe {

namespace {

/// The firings of one step, by op id.
using step_firings = std::map<int, std::vector<const trace_event*>>;

class step_checker {
 public:
  step_checker(const trace_source& source, std::uint64_t step, const step_firings& fired,
               std::vector<hazard_violation>& out)
      : source_(source), step_(step), fired_(fired), out_(out) {}

  void run() {
    for (const op_handle& op : source_.graph.ops) {
      auto it = fired_.find(op.id);
      std::size_t n = it == fired_.end() ? 0 : it->second.size();
      if (n != 1)
        report(label(op.id) + " fired " + std::to_string(n) + " times, not once");
    }
    for (const var_handle& v : source_.graph.vars)
      if (!v.dummy) check_version(v);
  }

 private:
  const trace_event* firing(int op) const {
    auto it = fired_.find(op);
    return it == fired_.end() || it->second.size() != 1 ? nullptr : it->second.front();
  }

  std::string label(int op) const {
    return describe(source_.graph.ops.at(static_cast<std::size_t>(op)), source_.main,
                    source_.place_names);
  }

  std::string var_at(const var_handle& v) const {
    return version_name(v) + " on " + source_.place_names.at(static_cast<std::size_t>(v.place));
  }

  void report(const std::string& what) {
    out_.push_back({step_, "step " + std::to_string(step_) + ": " + what});
  }

  void check_version(const var_handle& v) {
    const trace_event* writer = v.generated_op >= 0 ? firing(v.generated_op) : nullptr;
    const var_handle* next = next_version(v);
    const trace_event* next_writer = next != nullptr ? firing(next->generated_op) : nullptr;
    std::set<int> readers(v.pending_ops.begin(), v.pending_ops.end());
    for (int r : readers) {
      const trace_event* read = firing(r);
      if (read == nullptr) continue; // reported as not fired once
      if (writer != nullptr && read->start_ns < writer->end_ns)
        report(label(r) + " read " + var_at(v) + " before " + label(v.generated_op) +
               " finished writing it (read after write)");
      if (next_writer != nullptr && r != next->generated_op && read->end_ns > next_writer->start_ns)
        report(label(r) + " was still reading " + var_at(v) + " when " +
               label(next->generated_op) + " started writing " + version_name(*next) +
               " (write after read)");
    }
    if (writer != nullptr && next_writer != nullptr && next_writer->start_ns < writer->end_ns &&
        next->generated_op != v.generated_op)
      report(label(next->generated_op) + " started writing " + version_name(*next) + " on " +
             source_.place_names.at(static_cast<std::size_t>(v.place)) + " before " +
             label(v.generated_op) + " finished writing " + version_name(v) +
             " (write after write)");
  }

  /// name@(v+1) on the same place, or nullptr.
  const var_handle* next_version(const var_handle& v) {
    if (versions_.empty())
      for (const var_handle& u : source_.graph.vars)
        if (!u.dummy) versions_[{u.place, u.name, u.version}] = &u;
    auto it = versions_.find({v.place, v.name, v.version + 1});
    return it == versions_.end() ? nullptr : it->second;
  }

  const trace_source& source_;
  std::uint64_t step_;
  const step_firings& fired_;
  std::vector<hazard_violation>& out_;
  std::map<std::tuple<int, std::string, int>, const var_handle*> versions_;
};

} // namespace

std::vector<hazard_violation> check_hazards(const trace_source& source,
                                            const std::vector<trace_event>& events) {
  std::map<std::uint64_t, step_firings> steps;
  for (const auto& e : events) steps[e.step][e.op].push_back(&e);
  std::vector<hazard_violation> out;
  for (const auto& [step, fired] : steps) step_checker(source, step, fired, out).run();
  return out;
}

} // namespace pe

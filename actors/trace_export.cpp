#include "actors/trace_export.hpp"

#include <algorithm>
#include <map>
#include <ostream>

#include <nlohmann/json.hpp>

namespace pe {

namespace {

using json = nlohmann::json;

double micros(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

/// Assigns every event a track: its group (a place, or the collectives) and the first lane
/// of that group free at its start.
class track_layout {
 public:
  track_layout(const trace_source& source, const std::vector<trace_event>& events) {
    // Groups in display order: the places, the collectives, the steps.
    for (const auto& name : source.place_names) rank_[name] = static_cast<int>(rank_.size());
    rank_["collectives"] = static_cast<int>(rank_.size());
    rank_["steps"] = static_cast<int>(rank_.size());
    for (const auto& name : source.place_names) track(name, 0);
    for (std::size_t i = 0; i < events.size(); ++i) { // events are sorted by start
      const trace_event& e = events[i];
      const op_handle& op = source.graph.ops.at(static_cast<std::size_t>(e.op));
      std::string group = is_collective(op.what)
                              ? std::string("collectives")
                              : source.place_names.at(static_cast<std::size_t>(op.place));
      auto& lanes = lane_ends_[group];
      std::size_t lane = 0;
      while (lane < lanes.size() && lanes[lane] > e.start_ns) ++lane;
      if (lane == lanes.size()) lanes.push_back(0);
      lanes[lane] = e.end_ns;
      track_of_event_.push_back(track(group, lane));
    }
    steps_track_ = track("steps", 0);
  }

  int of_event(std::size_t i) const { return track_of_event_[i]; }
  int steps() const { return steps_track_; }
  const std::vector<std::string>& names() const { return names_; }
  /// Where a track sorts: lanes of a group together, groups in display order.
  int sort_index(std::size_t track) const { return sort_keys_[track]; }

 private:
  int track(const std::string& group, std::size_t lane) {
    std::string name = lane == 0 ? group : group + " (" + std::to_string(lane + 1) + ")";
    auto [it, added] = ids_.try_emplace(name, static_cast<int>(names_.size()));
    if (added) {
      names_.push_back(name);
      sort_keys_.push_back(rank_.at(group) * 1000 + static_cast<int>(lane));
    }
    return it->second;
  }

  std::map<std::string, std::vector<std::int64_t>> lane_ends_;
  std::map<std::string, int> rank_;
  std::map<std::string, int> ids_;
  std::vector<std::string> names_;
  std::vector<int> sort_keys_;
  std::vector<int> track_of_event_;
  int steps_track_ = 0;
};

json var_list(const trace_source& source, const std::vector<int>& ids, bool collective) {
  json out = json::array();
  for (int id : ids) {
    const var_handle& v = source.graph.vars.at(static_cast<std::size_t>(id));
    if (v.dummy) continue;
    std::string name = version_name(v);
    if (collective) name += " (" + source.place_names.at(static_cast<std::size_t>(v.place)) + ")";
    out.push_back(name);
  }
  return out;
}

} // namespace

void write_chrome_trace(std::ostream& out, const trace_source& source,
                        const std::vector<trace_event>& events) {
  track_layout layout(source, events);
  json trace_events = json::array();
  trace_events.push_back({{"ph", "M"}, {"pid", 1}, {"name", "process_name"},
                          {"args", {{"name", "pe-actor"}}}});

  // (step, op) -> event index, to draw the messages.
  std::map<std::pair<std::uint64_t, int>, std::size_t> fired;
  std::map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> step_extent;
  // Op id -> position among the collectives: the order every process issues them in.
  std::map<int, int> collective_index;
  for (const op_handle& op : source.graph.ops)
    if (is_collective(op.what)) collective_index.emplace(op.id, static_cast<int>(collective_index.size()));
  for (std::size_t i = 0; i < events.size(); ++i) {
    const trace_event& e = events[i];
    const op_handle& op = source.graph.ops.at(static_cast<std::size_t>(e.op));
    bool collective = is_collective(op.what);
    fired.emplace(std::make_pair(e.step, e.op), i);
    auto [extent, added] = step_extent.try_emplace(e.step, e.start_ns, e.end_ns);
    if (!added) {
      extent->second.first = std::min(extent->second.first, e.start_ns);
      extent->second.second = std::max(extent->second.second, e.end_ns);
    }
    trace_events.push_back(
        {{"ph", "X"},
         {"pid", 1},
         {"tid", layout.of_event(i)},
         {"ts", micros(e.start_ns)},
         {"dur", micros(e.end_ns - e.start_ns)},
         {"name", op_type_name(op, source.main)},
         {"cat", collective ? "collective" : op.what == op_handle::kind::computation ? "computation" : "engine"},
         {"args",
          {{"step", e.step},
           {"op", e.op},
           {"label", describe(op, source.main, source.place_names)},
           {"inputs", var_list(source, op.inputs, collective)},
           {"outputs", var_list(source, op.outputs, collective)},
           {"thread", e.thread},
           {"enqueued_us", micros(e.enqueued_ns)}}}});
    if (collective) trace_events.back()["args"]["collective"] = collective_index.at(e.op);
  }

  // One arrow per message: every output edge of a fired op to a reader fired in the same step.
  std::uint64_t flow_id = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const trace_event& e = events[i];
    for (int v : source.graph.ops.at(static_cast<std::size_t>(e.op)).outputs)
      for (int reader : source.graph.vars.at(static_cast<std::size_t>(v)).pending_ops) {
        auto r = fired.find({e.step, reader});
        if (r == fired.end()) continue;
        ++flow_id;
        trace_events.push_back({{"ph", "s"}, {"pid", 1}, {"tid", layout.of_event(i)},
                                {"ts", micros(e.end_ns)}, {"id", flow_id}, {"name", "message"},
                                {"cat", "message"}});
        trace_events.push_back({{"ph", "f"}, {"bp", "e"}, {"pid", 1},
                                {"tid", layout.of_event(r->second)},
                                {"ts", micros(events[r->second].start_ns)}, {"id", flow_id},
                                {"name", "message"}, {"cat", "message"}});
      }
  }

  for (const auto& [step, extent] : step_extent)
    trace_events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", layout.steps()},
                            {"ts", micros(extent.first)}, {"dur", micros(extent.second - extent.first)},
                            {"name", "step " + std::to_string(step)}, {"cat", "step"},
                            {"args", {{"step", step}}}});
  for (std::size_t t = 0; t < layout.names().size(); ++t) {
    trace_events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", t}, {"name", "thread_name"},
                            {"args", {{"name", layout.names()[t]}}}});
    trace_events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", t}, {"name", "thread_sort_index"},
                            {"args", {{"sort_index", layout.sort_index(t)}}}});
  }

  json doc = {{"traceEvents", std::move(trace_events)},
              {"displayTimeUnit", "ns"},
              {"otherData",
               {{"tool", "pe-actor"},
                {"places", source.place_names},
                {"tracks", layout.names()},
                {"process",
                 {{"rank", source.process_rank},
                  {"processes", source.num_processes},
                  {"clock_offset_ns", source.clock_offset_ns},
                  {"origin_ns", source.origin_ns}}}}}};
  out << doc.dump() << '\n';
}

} // namespace pe

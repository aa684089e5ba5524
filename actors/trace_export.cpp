#include "actors/trace_export.hpp"

#include <algorithm>
#include <map>
#include <ostream>

#include <nlohmann/json.hpp>

#include "actors/trace_format.hpp"

namespace pe {

namespace {

using json = nlohmann::json;
using trace_format::to_us;
namespace key = trace_format::key;
namespace phase = trace_format::phase;
namespace category = trace_format::category;
namespace metadata = trace_format::metadata;

/// Assigns every event a track: its group (a place, or the collectives) and the first lane
/// of that group free at its start.
class track_layout {
 public:
  track_layout(const trace_source& source, const std::vector<trace_event>& events) {
    // Groups in display order: the places, the collectives, the steps.
    for (const auto& name : source.place_names) rank_[name] = static_cast<int>(rank_.size());
    rank_[trace_format::collectives_track] = static_cast<int>(rank_.size());
    rank_[trace_format::steps_track] = static_cast<int>(rank_.size());
    for (const auto& name : source.place_names) track(name, 0);
    for (std::size_t i = 0; i < events.size(); ++i) { // events are sorted by start
      const trace_event& e = events[i];
      const op_handle& op = source.graph.ops.at(static_cast<std::size_t>(e.op));
      std::string group = is_collective(op.what)
                              ? std::string(trace_format::collectives_track)
                              : source.place_names.at(static_cast<std::size_t>(op.place));
      auto& lanes = lane_ends_[group];
      std::size_t lane = 0;
      while (lane < lanes.size() && lanes[lane] > e.start_ns) ++lane;
      if (lane == lanes.size()) lanes.push_back(0);
      lanes[lane] = e.end_ns;
      track_of_event_.push_back(track(group, lane));
    }
    steps_track_ = track(trace_format::steps_track, 0);
  }

  int of_event(std::size_t i) const { return track_of_event_[i]; }
  int steps() const { return steps_track_; }
  const std::vector<std::string>& names() const { return names_; }
  /// Where a track sorts: lanes of a group together, groups in display order.
  int sort_index(std::size_t track) const { return sort_keys_[track]; }

 private:
  int track(const std::string& group, std::size_t lane) {
    std::string name = trace_format::track_name(group, lane);
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

/// The event's name and label: its op's (op_type_name, describe), but for an all_gather that
/// ran as the dense fallback, what ran: "all_reduce (dense fallback)" and
/// "all_reduce(w@GRAD) (dense fallback of all_gather)".
std::pair<std::string, std::string> event_names(const trace_source& source, const op_handle& op,
                                                const trace_event& e) {
  std::string name = op_type_name(op, source.main), label = describe(op, source.main, source.place_names);
  if (!e.dense_fallback) return {name, label};
  const std::string gather = "all_gather";
  if (label.rfind(gather, 0) == 0) label = "all_reduce" + label.substr(gather.size());
  return {"all_reduce (dense fallback)", label + " (dense fallback of all_gather)"};
}

} // namespace

void write_chrome_trace(std::ostream& out, const trace_source& source,
                        const std::vector<trace_event>& events) {
  track_layout layout(source, events);
  json trace_events = json::array();
  constexpr int pid = trace_format::first_pid;
  trace_events.push_back({{key::ph, phase::metadata}, {key::pid, pid},
                          {key::name, metadata::process_name},
                          {key::args, {{key::name, trace_format::tool_name}}}});

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
    const auto [name, label] = event_names(source, op, e);
    const char* cat = collective                                   ? category::collective
                      : op.what == op_handle::kind::computation ? category::computation
                                                                 : category::engine;
    trace_events.push_back(
        {{key::ph, phase::span},
         {key::pid, pid},
         {key::tid, layout.of_event(i)},
         {key::ts, to_us(e.start_ns)},
         {key::dur, to_us(e.end_ns - e.start_ns)},
         {key::name, name},
         {key::cat, cat},
         {key::args,
          {{key::step, e.step},
           {key::op, e.op},
           {key::label, label},
           {key::inputs, var_list(source, op.inputs, collective)},
           {key::outputs, var_list(source, op.outputs, collective)},
           {key::thread, e.thread},
           {key::enqueued_us, to_us(e.enqueued_ns)}}}});
    if (collective) trace_events.back()[key::args][key::collective] = collective_index.at(e.op);
    if (e.launch_end_ns != 0) {
      trace_events.back()[key::args][key::launched_us] = to_us(e.launch_start_ns);
      trace_events.back()[key::args][key::launch_us] = to_us(e.launch_end_ns - e.launch_start_ns);
    }
  }

  // One arrow per edge: every output edge of a fired op to a reader fired in the same step (a
  // message, or stream order inside a firing group).
  std::uint64_t flow_id = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const trace_event& e = events[i];
    for (int v : source.graph.ops.at(static_cast<std::size_t>(e.op)).outputs)
      for (int reader : source.graph.vars.at(static_cast<std::size_t>(v)).pending_ops) {
        auto r = fired.find({e.step, reader});
        if (r == fired.end()) continue;
        ++flow_id;
        trace_events.push_back({{key::ph, phase::flow_start}, {key::pid, pid},
                                {key::tid, layout.of_event(i)}, {key::ts, to_us(e.end_ns)},
                                {key::id, flow_id}, {key::name, category::message},
                                {key::cat, category::message}});
        trace_events.push_back({{key::ph, phase::flow_end}, {key::bp, phase::enclosing},
                                {key::pid, pid}, {key::tid, layout.of_event(r->second)},
                                {key::ts, to_us(events[r->second].start_ns)}, {key::id, flow_id},
                                {key::name, category::message}, {key::cat, category::message}});
      }
  }

  for (const auto& [step, extent] : step_extent)
    trace_events.push_back({{key::ph, phase::span}, {key::pid, pid}, {key::tid, layout.steps()},
                            {key::ts, to_us(extent.first)},
                            {key::dur, to_us(extent.second - extent.first)},
                            {key::name, "step " + std::to_string(step)},
                            {key::cat, category::step}, {key::args, {{key::step, step}}}});
  for (const trace_instant& i : source.instants)
    trace_events.push_back({{key::ph, phase::instant}, {key::scope, phase::process_scope}, {key::pid, pid},
                            {key::tid, layout.steps()}, {key::ts, to_us(i.ns)}, {key::name, i.name},
                            {key::cat, category::stall},
                            {key::args, {{key::step, i.step}, {key::report, i.text}}}});
  for (std::size_t t = 0; t < layout.names().size(); ++t) {
    trace_events.push_back({{key::ph, phase::metadata}, {key::pid, pid}, {key::tid, t},
                            {key::name, metadata::thread_name},
                            {key::args, {{key::name, layout.names()[t]}}}});
    trace_events.push_back({{key::ph, phase::metadata}, {key::pid, pid}, {key::tid, t},
                            {key::name, metadata::thread_sort_index},
                            {key::args, {{key::sort_index, layout.sort_index(t)}}}});
  }

  json doc = {{key::trace_events, std::move(trace_events)},
              {key::display_time_unit, trace_format::display_unit},
              {key::other_data,
               {{key::tool, trace_format::tool_name},
                {key::places, source.place_names},
                {key::tracks, layout.names()},
                {key::process,
                 {{key::rank, source.process_rank},
                  {key::processes, source.num_processes},
                  {key::clock_offset_ns, source.clock_offset_ns},
                  {key::origin_ns, source.origin_ns}}}}}};
  out << doc.dump() << '\n';
}

} // namespace pe

#include "apps/trace/trace_merge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <map>
#include <ostream>
#include <utility>

#include <nlohmann/json.hpp>

#include "actors/trace_format.hpp"
#include "apps/trace/trace_document.hpp"
#include "core/error.hpp"
#include "core/json_integer.hpp"

namespace pe {

namespace {

using json = nlohmann::json;
namespace key = trace_format::key;
namespace phase = trace_format::phase;
namespace category = trace_format::category;
namespace metadata = trace_format::metadata;

constexpr const char* clocks_note =
  "Times are microseconds on rank 0's steady clock, counted from origin_ns (the earliest "
  "process's trace origin on that clock). Each process's clock_offset_ns (its steady clock "
  "minus rank 0's) was estimated from round trips when the processes met at rendezvous, so "
  "the processes' times may be off from each other by up to half a round trip.";

/// One input: its parsed file and where it sits in the job.
struct process_trace {
  std::string path;
  json doc;
  int rank = 0;
  int processes = 1;
  std::int64_t clock_offset_ns = 0; ///< this process's steady clock minus rank 0's
  std::int64_t origin_ns = 0;       ///< the steady-clock time its "ts" count from
};

/// One process's span of a collective, on the merged clock.
struct collective_end {
  int pid;
  json tid;
  std::string name;
  double start_us;
  double end_us;
  std::string label; ///< "all_reduce(fc_0.w_0@GRAD)"
};

/// Each process's spans of one collective, by (step, "collective" arg), in rank order.
using collective_spans =
  std::map<std::pair<std::uint64_t, std::int64_t>, std::vector<collective_end>>;

/// Where a trace is placed among the merged ones: pids start at 1, as in a single trace.
int pid_of(int rank) {
  return trace_format::first_pid + rank;
}

process_trace read_process_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw error(path + ": cannot open the file");
  process_trace trace;
  trace.path = path;
  try {
    trace.doc = json::parse(in);
    const json& other = pe_actor_other_data(trace.doc);
    if (other.contains(key::merged))
      throw error("already a merged trace; merge the traces each process wrote (t.rankR.json)");
    if (!other.contains(key::process))
      throw error("the trace has no otherData.process (rank, clock offset): written by a "
                  "pe-actor-run that predates multi-process traces");
    const json& process = other.at(key::process);
    trace.rank = json_integer<int>(process.at(key::rank), key::rank);
    trace.processes = json_integer<int>(process.at(key::processes), key::processes);
    trace.clock_offset_ns = json_integer<std::int64_t>(process.at(key::clock_offset_ns), key::clock_offset_ns);
    trace.origin_ns = json_integer<std::int64_t>(process.at(key::origin_ns), key::origin_ns);
    if (trace.rank < 0 || trace.rank >= trace.processes)
      throw error("rank " + std::to_string(trace.rank) + " of " +
                  std::to_string(trace.processes) + " processes is out of range");
    if (!trace.doc.at(key::trace_events).is_array())
      throw error("traceEvents is not an array");
  } catch (const json::exception& e) {
    throw error(path + ": not a pe-actor trace: " + e.what());
  } catch (const error& e) {
    throw error(path + ": " + e.what());
  }
  return trace;
}

std::string list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks)
    out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

/// Sorts the traces by rank and checks that they are the processes of one job, each once.
void check_one_job(std::vector<process_trace>& traces) {
  const process_trace& first = traces.front();
  for (const auto& t : traces)
    if (t.processes != first.processes)
      throw error(first.path + " is rank " + std::to_string(first.rank) + " of " +
                  std::to_string(first.processes) + " processes, " + t.path + " rank " +
                  std::to_string(t.rank) + " of " + std::to_string(t.processes) +
                  ": traces of different jobs");
  std::stable_sort(traces.begin(), traces.end(),
                   [](const process_trace& a, const process_trace& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < traces.size(); ++i)
    if (traces[i].rank == traces[i - 1].rank)
      throw error(traces[i - 1].path + " and " + traces[i].path + " are both rank " +
                  std::to_string(traces[i].rank));
  std::vector<int> held, missing;
  for (const auto& t : traces)
    held.push_back(t.rank);
  for (int r = 0; r < first.processes; ++r)
    if (!std::binary_search(held.begin(), held.end(), r))
      missing.push_back(r);
  if (!missing.empty())
    throw error((missing.size() == 1 ? "rank " + list(missing) + " is missing"
                                     : "ranks " + list(missing) + " are missing") +
                " (the job has " + std::to_string(first.processes) +
                " processes; the traces hold rank" + (held.size() == 1 ? " " : "s ") +
                list(held) + ")");
}

/// Re-writes one process's events onto the merged clock and pid, numbering its message
/// arrows from `next_flow_id` on, and collects its collectives' spans by (step, collective).
void merge_events(const process_trace& trace, std::int64_t shift_ns, json& events,
                  std::uint64_t& next_flow_id, collective_spans& collectives) {
  const int pid = pid_of(trace.rank);
  auto shifted = [&](const json& ts) {
    return trace_format::to_us(trace_format::to_ns(ts.get<double>()) + shift_ns);
  };
  std::map<std::uint64_t, std::uint64_t> flow_ids;
  events.push_back({{key::ph, phase::metadata}, {key::pid, pid},
                    {key::name, metadata::process_name},
                    {key::args, {{key::name, "rank " + std::to_string(trace.rank)}}}});
  events.push_back({{key::ph, phase::metadata}, {key::pid, pid},
                    {key::name, metadata::process_sort_index},
                    {key::args, {{key::sort_index, trace.rank}}}});
  for (const json& e : trace.doc.at(key::trace_events)) {
    const std::string ph = e.at(key::ph).get<std::string>();
    if (ph == phase::metadata && e.value(key::name, "") == metadata::process_name)
      continue; // replaced by "rank R"
    json out = e;
    out[key::pid] = pid;
    if (out.contains(key::ts))
      out[key::ts] = shifted(out.at(key::ts));
    if (out.contains(key::args))
      for (const char* host_time : {key::enqueued_us, key::launched_us})
        if (out[key::args].contains(host_time))
          out[key::args][host_time] = shifted(out[key::args][host_time]);
    if (ph == phase::flow_start || ph == phase::flow_end) {
      auto [id, added] = flow_ids.try_emplace(json_integer<std::uint64_t>(e.at(key::id), key::id), next_flow_id);
      next_flow_id += added;
      out[key::id] = id->second;
    }
    if (ph == phase::span && e.value(key::cat, "") == category::collective &&
        e.at(key::args).contains(key::collective)) {
      const json& args = e.at(key::args);
      auto which = std::make_pair(json_integer<std::uint64_t>(args.at(key::step), key::step),
                                  json_integer<std::int64_t>(args.at(key::collective), key::collective));
      auto& ends = collectives[which];
      if (!ends.empty() && ends.back().pid == pid)
        throw error("collective " + std::to_string(which.second) + " of step " +
                    std::to_string(which.first) + " has two spans");
      double start = out.at(key::ts).get<double>();
      const std::string name = out.at(key::name).get<std::string>();
      ends.push_back({pid, out.at(key::tid), name, start, start + out.at(key::dur).get<double>(),
                      args.value(key::label, name)});
    }
    events.push_back(std::move(out));
  }
}

/// The cross-process messages of one collective: every process sends its part to every other
/// one, from the start of its span to the end of the receiver's.
std::size_t add_network_arrows(const std::vector<collective_end>& ends, json& events,
                               std::uint64_t& next_flow_id) {
  std::size_t arrows = 0;
  for (const auto& from : ends)
    for (const auto& to : ends) {
      if (from.pid == to.pid)
        continue;
      auto id = next_flow_id++;
      events.push_back({{key::ph, phase::flow_start}, {key::pid, from.pid},
                        {key::tid, from.tid}, {key::ts, from.start_us}, {key::id, id},
                        {key::name, from.name}, {key::cat, category::network}});
      events.push_back({{key::ph, phase::flow_end}, {key::bp, phase::enclosing},
                        {key::pid, to.pid}, {key::tid, to.tid}, {key::ts, to.end_us},
                        {key::id, id}, {key::name, from.name}, {key::cat, category::network}});
      ++arrows;
    }
  return arrows;
}

/// The job's arrival skew at each collective every process traced: on a process of its own,
/// "collective skew", sorted after the ranks, a span from the earliest process's arrival (the
/// start of its span) to the latest one's, named after the latest and how late it came (ties:
/// the higher rank, as pe-actor-trace stragglers counts). So the timeline shows where the
/// processes drift apart; stragglers gives the statistics.
std::size_t add_skew_spans(const collective_spans& collectives, int processes, json& events) {
  const int pid = pid_of(processes);
  events.push_back({{key::ph, phase::metadata}, {key::pid, pid}, {key::name, metadata::process_name},
                    {key::args, {{key::name, "collective skew"}}}});
  events.push_back({{key::ph, phase::metadata}, {key::pid, pid}, {key::name, metadata::process_sort_index},
                    {key::args, {{key::sort_index, processes}}}});
  events.push_back({{key::ph, phase::metadata}, {key::pid, pid}, {key::tid, 0},
                    {key::name, metadata::thread_name}, {key::args, {{key::name, "arrivals"}}}});
  std::size_t spans = 0;
  for (const auto& [which, ends] : collectives) {
    if (static_cast<int>(ends.size()) != processes)
      continue; // a process did not trace it (--trace-steps differ)
    const collective_end* first = &ends.front();
    const collective_end* latest = &ends.front();
    for (const auto& e : ends) {
      if (e.start_us < first->start_us) first = &e;
      if (e.start_us >= latest->start_us) latest = &e;
    }
    const double late_us = latest->start_us - first->start_us;
    const int latest_rank = latest->pid - trace_format::first_pid;
    char late_ms[32];
    std::snprintf(late_ms, sizeof late_ms, "%.3f", late_us / 1000);
    events.push_back({{key::ph, phase::span},
                      {key::pid, pid},
                      {key::tid, 0},
                      {key::ts, first->start_us},
                      {key::dur, late_us},
                      {key::name, "rank " + std::to_string(latest_rank) + " " + late_ms + " ms late"},
                      {key::cat, category::skew},
                      {key::args,
                       {{key::step, which.first},
                        {key::collective, which.second},
                        {key::label, latest->label},
                        {key::first_rank, first->pid - trace_format::first_pid},
                        {key::latest_rank, latest_rank},
                        {key::late_us, late_us}}}});
    ++spans;
  }
  return spans;
}

} // namespace

merge_report merge_traces(const std::vector<std::string>& paths, std::ostream& out) {
  if (paths.size() < 2)
    throw error("merge: expected the traces of at least 2 processes, got " +
                std::to_string(paths.size()));
  std::vector<process_trace> traces;
  for (const auto& path : paths)
    traces.push_back(read_process_trace(path));
  check_one_job(traces);

  // On rank 0's clock, time t of a process is its origin_ns + t - clock_offset_ns.
  std::int64_t origin_ns = traces.front().origin_ns - traces.front().clock_offset_ns;
  for (const auto& t : traces)
    origin_ns = std::min(origin_ns, t.origin_ns - t.clock_offset_ns);

  merge_report report;
  json events = json::array(), merged = json::array();
  std::uint64_t next_flow_id = 1;
  collective_spans collectives;
  for (const auto& t : traces) {
    try {
      merge_events(t, t.origin_ns - t.clock_offset_ns - origin_ns, events, next_flow_id,
                   collectives);
    } catch (const json::exception& e) {
      throw error(t.path + ": not a pe-actor trace: " + e.what());
    } catch (const error& e) {
      throw error(t.path + ": " + e.what());
    }
    merged.push_back(
        {{key::file, t.path},
         {key::rank, t.rank},
         {key::clock_offset_ns, t.clock_offset_ns},
         {key::origin_ns, t.origin_ns},
         {key::places, t.doc.at(key::other_data).value(key::places, json::array())}});
  }
  std::string arrows_note;
  if (traces.size() > max_processes_with_network_arrows) {
    report.network_arrows_left_out = true;
    arrows_note = "left out: " + std::to_string(traces.size()) + " processes (drawn for up to " +
                  std::to_string(max_processes_with_network_arrows) + ")";
  } else {
    for (const auto& [key, ends] : collectives)
      report.network_arrows += add_network_arrows(ends, events, next_flow_id);
    arrows_note = "one per collective and ordered pair of processes, from the sender's span "
                  "start to the receiver's span end";
  }
  report.skew_spans = add_skew_spans(collectives, static_cast<int>(traces.size()), events);
  report.events = events.size();

  json doc = {{key::trace_events, std::move(events)},
              {key::display_time_unit, trace_format::display_unit},
              {key::other_data,
               {{key::tool, trace_format::tool_name},
                {key::origin_ns, origin_ns},
                {key::merged, std::move(merged)},
                {key::clocks, clocks_note},
                {key::network_arrows, arrows_note},
                {key::skew, "the process \"collective skew\": per collective every process traced, a span "
                            "from the earliest process's arrival (its span's start) to the latest's, named "
                            "after the latest and how late it came"}}}};
  out << doc.dump() << '\n';
  return report;
}

bool is_merged_trace(const std::string& path) {
  std::ifstream in(path);
  json doc = json::parse(in, nullptr, false);
  return doc.is_object() && doc.contains(key::other_data) && doc[key::other_data].is_object() &&
         doc[key::other_data].contains(key::merged);
}

} // namespace pe

#include "apps/trace/trace_analysis.hpp"

#include <algorithm>
#include <map>

#include "actors/trace_format.hpp"

namespace pe {

std::vector<op_type_time> op_type_times(const trace_file& trace) {
  std::map<std::string, op_type_time> by_name;
  for (const auto& s : trace.spans) {
    auto& t = by_name[s.name];
    t.name = s.name;
    t.total_us += s.duration_us();
    ++t.count;
  }
  std::vector<op_type_time> out;
  for (auto& [name, t] : by_name)
    out.push_back(std::move(t));
  std::stable_sort(out.begin(), out.end(), [](const op_type_time& a, const op_type_time& b) {
    return a.total_us > b.total_us;
  });
  return out;
}

std::vector<track_busy> track_busy_times(const trace_file& trace) {
  std::vector<double> busy(trace.tracks.size(), 0);
  for (const auto& s : trace.spans)
    busy[s.track] += s.duration_us(); // the spans of one track do not overlap
  std::vector<track_busy> out;
  for (std::size_t t : trace.display_tracks())
    out.push_back({t, busy[t]});
  return out;
}

double traced_wall_us(const trace_file& trace) {
  double wall = 0;
  for (const auto& s : trace.steps)
    wall += s.duration_us();
  return wall;
}

std::vector<std::size_t> critical_path(const trace_file& trace, std::uint64_t step) {
  auto spans = trace.spans_of(step);
  if (spans.empty())
    return {};
  std::map<std::size_t, std::vector<std::size_t>> senders;
  for (const auto& m : trace.messages)
    senders[m.to].push_back(m.from);
  // Stream order: each span also waits for the span before it on its track.
  std::map<std::size_t, std::size_t> last_on_track;
  std::vector<std::size_t> by_start = spans;
  std::sort(by_start.begin(), by_start.end(), [&](std::size_t a, std::size_t b) {
    return trace.spans[a].start_us < trace.spans[b].start_us;
  });
  for (std::size_t s : by_start) {
    auto [previous, first] = last_on_track.try_emplace(trace.spans[s].track, s);
    if (!first) {
      senders[s].push_back(previous->second);
      previous->second = s;
    }
  }
  auto ends_before = [&](std::size_t a, std::size_t b) {
    return trace.spans[a].end_us < trace.spans[b].end_us;
  };
  std::vector<std::size_t> path = {*std::max_element(spans.begin(), spans.end(), ends_before)};
  for (auto it = senders.find(path.back()); it != senders.end(); it = senders.find(path.back()))
    path.push_back(*std::max_element(it->second.begin(), it->second.end(), ends_before));
  std::reverse(path.begin(), path.end());
  return path;
}

std::string track_group(const std::string& track) {
  return trace_format::track_group(track);
}

std::vector<idle_gap> idle_gaps(const trace_file& trace, std::uint64_t step, double min_us) {
  const trace_step& extent = trace.step(step);
  std::vector<std::string> groups;
  for (std::size_t t : trace.display_tracks()) {
    auto group = track_group(trace.tracks[t]);
    if (std::find(groups.begin(), groups.end(), group) == groups.end())
      groups.push_back(group);
  }
  auto spans = trace.spans_of(step);
  std::vector<idle_gap> out;
  for (const auto& group : groups) {
    double idle_since = extent.start_us;
    std::optional<std::size_t> last; // the span that ends at idle_since
    auto gap_until = [&](double end_us, std::optional<std::size_t> next) {
      if (end_us - idle_since > min_us)
        out.push_back({group, idle_since, end_us, last, next});
    };
    for (std::size_t i : spans) { // by start
      const trace_span& s = trace.spans[i];
      if (track_group(trace.tracks[s.track]) != group)
        continue;
      gap_until(s.start_us, i);
      if (s.end_us > idle_since) {
        idle_since = s.end_us;
        last = i;
      }
    }
    gap_until(extent.end_us, std::nullopt);
  }
  return out;
}

} // namespace pe

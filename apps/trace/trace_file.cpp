#include "apps/trace/trace_file.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "actors/trace_format.hpp"
#include "apps/trace/trace_document.hpp"
#include "core/error.hpp"
#include "core/json_integer.hpp"

namespace pe {

namespace {

using json = nlohmann::json;
using trace_format::same_time_us;
namespace key = trace_format::key;
namespace phase = trace_format::phase;

/// Finds the span of a track that a message arrow starts (ends) at.
class span_index {
 public:
  explicit span_index(const trace_file& trace) : trace_(trace), by_track_(trace.tracks.size()) {
    for (std::size_t i = 0; i < trace.spans.size(); ++i)
      by_track_.at(trace.spans[i].track).push_back(i); // by start; lanes do not overlap
  }

  /// The span on `track` ending (`at_end`) or starting at `ts`.
  std::size_t at(std::size_t track, double ts, bool at_end) const {
    const auto& spans = by_track_.at(track);
    auto time = [&](std::size_t i) {
      return at_end ? trace_.spans[i].end_us : trace_.spans[i].start_us;
    };
    auto it = std::lower_bound(spans.begin(), spans.end(), ts - same_time_us,
                               [&](std::size_t i, double t) { return time(i) < t; });
    if (it == spans.end() || std::abs(time(*it) - ts) > same_time_us)
      throw error("a message arrow at " + std::to_string(ts) + " us on track " +
                  trace_.tracks.at(track) + " meets no span " +
                  (at_end ? "ending" : "starting") + " there");
    return *it;
  }

 private:
  const trace_file& trace_;
  std::vector<std::vector<std::size_t>> by_track_;
};

std::size_t track_of(const json& event, const trace_file& trace) {
  auto tid = json_integer<std::size_t>(event.at(key::tid), key::tid);
  if (tid >= trace.tracks.size())
    throw error("an event names track " + std::to_string(tid) + " of " +
                std::to_string(trace.tracks.size()));
  return tid;
}

/// Spans, steps and sort indices; the message arrows' ends by flow id.
void read_events(const json& events, trace_file& trace,
                 std::map<std::uint64_t, std::pair<const json*, const json*>>& arrows) {
  trace.track_sort_index.assign(trace.tracks.size(), 0);
  for (std::size_t t = 0; t < trace.tracks.size(); ++t)
    trace.track_sort_index[t] = static_cast<int>(t);
  for (const json& e : events) {
    auto ph = e.at(key::ph).get<std::string>();
    if (ph == phase::span && e.at(key::cat) == trace_format::category::step) {
      double ts = e.at(key::ts).get<double>();
      trace.steps.push_back({json_integer<std::uint64_t>(e.at(key::args).at(key::step), key::step), ts,
                             ts + e.at(key::dur).get<double>()});
    } else if (ph == phase::span) {
      const json& args = e.at(key::args);
      double ts = e.at(key::ts).get<double>();
      trace.spans.push_back({e.at(key::name).get<std::string>(),
                             e.at(key::cat).get<std::string>(),
                             args.at(key::label).get<std::string>(),
                             json_integer<std::uint64_t>(args.at(key::step), key::step), track_of(e, trace), ts,
                             ts + e.at(key::dur).get<double>()});
    } else if (ph == phase::flow_start) {
      arrows[json_integer<std::uint64_t>(e.at(key::id), key::id)].first = &e;
    } else if (ph == phase::flow_end) {
      arrows[json_integer<std::uint64_t>(e.at(key::id), key::id)].second = &e;
    } else if (ph == phase::metadata && e.at(key::name) == trace_format::metadata::thread_sort_index) {
      trace.track_sort_index.at(track_of(e, trace)) =
          json_integer<int>(e.at(key::args).at(key::sort_index), key::sort_index);
    }
  }
}

trace_file parse(const json& doc) {
  const json& other = pe_actor_other_data(doc);
  trace_file trace;
  trace.places = other.at(key::places).get<std::vector<std::string>>();
  trace.tracks = other.at(key::tracks).get<std::vector<std::string>>();
  std::map<std::uint64_t, std::pair<const json*, const json*>> arrows;
  read_events(doc.at(key::trace_events), trace, arrows);

  auto by_start = [](const auto& a, const auto& b) { return a.start_us < b.start_us; };
  std::stable_sort(trace.spans.begin(), trace.spans.end(), by_start);
  std::sort(trace.steps.begin(), trace.steps.end(),
            [](const trace_step& a, const trace_step& b) { return a.step < b.step; });
  span_index spans(trace);
  for (const auto& [id, ends] : arrows) {
    if (ends.first == nullptr || ends.second == nullptr)
      throw error("message arrow " + std::to_string(id) + " lacks its start or its end");
    trace.messages.push_back(
      {spans.at(track_of(*ends.first, trace), ends.first->at(key::ts).get<double>(), true),
       spans.at(track_of(*ends.second, trace), ends.second->at(key::ts).get<double>(), false)});
  }
  return trace;
}

} // namespace

const trace_step& trace_file::step(std::uint64_t number) const {
  auto it = std::find_if(steps.begin(), steps.end(),
                         [&](const trace_step& s) { return s.step == number; });
  if (it != steps.end())
    return *it;
  if (steps.empty())
    throw error("the trace records no steps");
  throw error("step " + std::to_string(number) + " is not in the trace (it has steps " +
              std::to_string(steps.front().step) + ".." + std::to_string(steps.back().step) + ")");
}

std::vector<std::size_t> trace_file::display_tracks(std::optional<std::uint64_t> step) const {
  std::vector<bool> shown(tracks.size(), false);
  for (const auto& s : spans)
    if (!step || s.step == *step)
      shown[s.track] = true;
  for (std::size_t t = 0; t < tracks.size(); ++t)
    if (std::find(places.begin(), places.end(), tracks[t]) != places.end())
      shown[t] = true;
  std::vector<std::size_t> out;
  for (std::size_t t = 0; t < tracks.size(); ++t)
    if (shown[t])
      out.push_back(t);
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    return track_sort_index[a] < track_sort_index[b];
  });
  return out;
}

std::vector<std::size_t> trace_file::spans_of(std::uint64_t number) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < spans.size(); ++i)
    if (spans[i].step == number)
      out.push_back(i);
  return out;
}

trace_file read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw error(path + ": cannot open the file");
  try {
    return parse(json::parse(in));
  } catch (const json::exception& e) {
    throw error(path + ": not a pe-actor trace: " + e.what());
  } catch (const error& e) {
    throw error(path + ": " + e.what());
  }
}

} // namespace pe

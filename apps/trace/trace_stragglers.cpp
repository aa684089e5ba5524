#include "apps/trace/trace_stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "apps/trace/trace_document.hpp"

namespace pe {

namespace {

using json = nlohmann::json;
namespace key = trace_format::key;

struct arrival {
  int rank = 0;
  double at_us = 0;
  std::string label;
};

/// The `q` quantile (0..1) of `values` (not empty), nearest rank.
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const auto at = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, at == 0 ? 0 : at - 1)];
}

std::string ms(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", us / 1000);
  return text;
}

} // namespace

straggler_report find_stragglers(const json& doc, std::size_t top) {
  pe_actor_other_data(doc);
  // Every collective span, by (step, position among the step's collectives).
  std::map<std::pair<std::uint64_t, std::int64_t>, std::vector<arrival>> by_collective;
  int processes = 1;
  for (const json& e : doc.at(key::trace_events)) {
    if (e.value(key::ph, "") != "X" || e.value(key::cat, "") != "collective")
      continue;
    const json& args = e.at(key::args);
    if (!args.contains(key::collective))
      continue;
    const int rank = e.value(key::pid, trace_format::first_pid) - trace_format::first_pid;
    processes = std::max(processes, rank + 1);
    by_collective[{args.value(key::step, std::uint64_t{0}), args.at(key::collective).get<std::int64_t>()}]
        .push_back({rank, e.at(key::ts).get<double>(), args.value("label", e.value(key::name, "?"))});
  }
  straggler_report report;
  report.processes = processes;
  std::vector<std::vector<double>> late(static_cast<std::size_t>(processes));
  std::vector<std::size_t> last(static_cast<std::size_t>(processes), 0);
  for (const auto& [where, arrivals] : by_collective) {
    if (processes < 2 || static_cast<int>(arrivals.size()) != processes)
      continue; // a process did not trace it (--trace-steps differ), or nothing to compare
    ++report.collectives;
    const auto first = std::min_element(arrivals.begin(), arrivals.end(),
                                        [](const arrival& a, const arrival& b) { return a.at_us < b.at_us; });
    const arrival* latest = &arrivals.front();
    for (const arrival& a : arrivals) {
      late[static_cast<std::size_t>(a.rank)].push_back(a.at_us - first->at_us);
      if (a.at_us >= latest->at_us) latest = &a;
    }
    ++last[static_cast<std::size_t>(latest->rank)];
    report.latest.push_back({where.first, where.second, latest->label, latest->rank, first->rank,
                             latest->at_us - first->at_us});
  }
  for (int r = 0; r < processes; ++r) {
    const auto& l = late[static_cast<std::size_t>(r)];
    straggler_rank s;
    s.rank = r;
    s.last = last[static_cast<std::size_t>(r)];
    if (!l.empty()) {
      s.median_us = quantile(l, 0.5);
      s.p95_us = quantile(l, 0.95);
      s.max_us = *std::max_element(l.begin(), l.end());
    }
    report.ranks.push_back(s);
  }
  std::sort(report.latest.begin(), report.latest.end(),
            [](const straggler_arrival& a, const straggler_arrival& b) { return a.late_us > b.late_us; });
  if (report.latest.size() > top) report.latest.resize(top);
  return report;
}

void print_stragglers(const straggler_report& r, std::ostream& out) {
  if (r.processes < 2) {
    out << "one process's trace: nothing to compare (pe-actor-trace merge the job's traces, "
           "t.rank0.json t.rank1.json ..., and read the merged one)\n";
    return;
  }
  out << "lateness at the collectives: each process's arrival after the earliest one's, over "
      << r.collectives << " collectives every one of the " << r.processes << " processes traced\n";
  out << "rank   median ms      p95 ms      max ms   last at\n";
  for (const auto& s : r.ranks) {
    char line[128];
    std::snprintf(line, sizeof line, "%4d %11s %11s %11s   %zu of %zu\n", s.rank, ms(s.median_us).c_str(),
                  ms(s.p95_us).c_str(), ms(s.max_us).c_str(), s.last, r.collectives);
    out << line;
  }
  if (r.latest.empty())
    return;
  out << "latest arrivals:\n";
  for (const auto& a : r.latest)
    out << "  step " << a.step << " collective #" << a.collective << " " << a.label << ": rank " << a.rank
        << " came " << ms(a.late_us) << " ms after rank " << a.first_rank << "\n";
}

} // namespace pe

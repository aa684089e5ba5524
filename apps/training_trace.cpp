#include "apps/training_trace.hpp"

#include <ostream>
#include <set>

#include "actors/hazard_check.hpp"
#include "actors/trace_export.hpp"
#include "devices/error.hpp"

namespace pe {

training_trace::training_trace(const run_options& o, engine& executor, std::int64_t steps)
    : options_(o), executor_(executor), recorder_(o.trace_first, o.trace_last) {
  if (o.trace_first > static_cast<std::uint64_t>(steps))
    throw error("--trace-steps " + std::to_string(o.trace_first) + ":" +
                std::to_string(o.trace_last) + ": the run has only " + std::to_string(steps) +
                " steps");
  if (!o.trace.empty()) {
    file_.open(o.trace);
    if (!file_)
      throw error("--trace " + o.trace + ": cannot open the file for writing");
  }
  executor_.trace(&recorder_);
}

training_trace::~training_trace() {
  executor_.trace(nullptr); // between steps: training has returned or thrown
}

trace_report training_trace::finish(std::ostream& out) {
  auto events = recorder_.events(); // no step runs now
  auto source = executor_.training_trace_source();
  trace_report report;
  if (!options_.trace.empty()) {
    write_chrome_trace(file_, source, events);
    if (!file_.flush())
      throw error("--trace " + options_.trace + ": cannot write the trace");
    report.metrics["trace"] = {{"file", options_.trace}, {"events", events.size()}};
  }
  if (options_.check_hazards) {
    std::set<std::uint64_t> steps;
    for (const auto& e : events) steps.insert(e.step);
    auto violations = check_hazards(source, events);
    out << "hazard check: " << steps.size() << " steps, " << events.size() << " firings, ";
    if (violations.empty()) {
      out << "no violations\n";
    } else {
      out << violations.size() << (violations.size() == 1 ? " violation:\n" : " violations:\n");
      for (const auto& v : violations) out << "  " << v.message << '\n';
    }
    report.metrics["hazards"] = {{"steps", steps.size()}, {"violations", violations.size()}};
    report.violations = violations.size();
  }
  return report;
}

} // namespace pe

#include "apps/run/training_trace.hpp"

#include <filesystem>
#include <ostream>
#include <set>

#include "actors/hazard_check.hpp"
#include "actors/trace_export.hpp"
#include "core/error.hpp"

namespace pe {

std::string trace_file_of(const run_options& o) {
  if (!o.multi_process() || o.trace.empty()) return o.trace;
  const std::filesystem::path path(o.trace);
  return (path.parent_path() / (path.stem().string() + ".rank" + std::to_string(o.node_rank) +
                                path.extension().string()))
      .string();
}

training_trace::training_trace(const run_options& o, engine& executor, std::int64_t steps)
    : options_(o), executor_(executor), recorder_(o.trace_first, o.trace_last),
      path_(trace_file_of(o)) {
  if (o.trace_first > static_cast<std::uint64_t>(steps))
    throw error("--trace-steps " + std::to_string(o.trace_first) + ":" +
                std::to_string(o.trace_last) + ": the run has only " + std::to_string(steps) +
                " steps");
  if (!path_.empty()) {
    file_.open(path_);
    if (!file_)
      throw error("--trace " + path_ + ": cannot open the file for writing");
  }
  executor_.trace(&recorder_);
}

training_trace::~training_trace() {
  executor_.trace(nullptr); // between steps: training has returned or thrown
}

trace_report training_trace::finish(std::ostream& out, const stall_log* stalls) {
  auto events = recorder_.events(); // no step runs now
  auto source = executor_.training_trace_source();
  source.origin_ns = recorder_.origin_ns();
  if (stalls != nullptr) source.instants = stalls->instants(recorder_);
  trace_report report;
  if (!path_.empty()) {
    write_chrome_trace(file_, source, events);
    if (!file_.flush())
      throw error("--trace " + path_ + ": cannot write the trace");
    report.metrics["trace"] = {{"file", path_}, {"events", events.size()}};
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

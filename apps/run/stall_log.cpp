#include "apps/run/stall_log.hpp"

#include <ostream>

namespace pe {

std::function<void(const stall_report&)> stall_log::sink() {
  return [this](const stall_report& r) { add(r); };
}

void stall_log::add(const stall_report& report) {
  std::lock_guard<std::mutex> guard(mutex_);
  reports_.push_back(report);
  err_ << "pe-actor-run: " << report.text << std::flush;
}

nlohmann::json stall_log::to_json() const {
  std::lock_guard<std::mutex> guard(mutex_);
  nlohmann::json out = nlohmann::json::array();
  for (const stall_report& r : reports_)
    out.push_back({{"step", r.step},
                   {"on_demand", r.on_demand},
                   {"idle_s", r.idle_s},
                   {"step_s", r.step_s},
                   {"root_cause", r.root_cause},
                   {"chain", r.chain}});
  return out;
}

std::vector<trace_instant> stall_log::instants(const trace_recorder& recorder) const {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<trace_instant> out;
  for (const stall_report& r : reports_)
    if (recorder.wants(r.step))
      out.push_back({recorder.from_steady(r.made_ns), r.step,
                     std::string(r.on_demand ? "progress report" : "stall report") + ", step " + std::to_string(r.step),
                     r.text});
  return out;
}

bool stall_log::empty() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return reports_.empty();
}

} // namespace pe

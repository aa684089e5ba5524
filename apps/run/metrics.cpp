#include "apps/run/metrics.hpp"

#include <fstream>

#include <sys/resource.h>

#include "core/error.hpp"

namespace pe {

void run_metrics::start() {
  start_ = last_ = clock::now();
  steps_.clear();
}

const run_metrics::step_record& run_metrics::record(double loss, std::int64_t samples) {
  auto now = clock::now();
  double seconds = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  steps_.push_back({static_cast<std::int64_t>(steps_.size()) + 1, loss, samples, seconds});
  return steps_.back();
}

double run_metrics::samples_per_sec() const {
  step_record timed{0, 0, 0, 0}; // steps 2..N together
  for (std::size_t i = steps_.size() > 1 ? 1 : 0; i < steps_.size(); ++i) {
    timed.samples += steps_[i].samples;
    timed.seconds += steps_[i].seconds;
  }
  return timed.samples_per_sec();
}

double run_metrics::wall_seconds() const {
  return std::chrono::duration<double>(last_ - start_).count();
}

nlohmann::json run_metrics::to_json(const nlohmann::json& config,
                                    const std::optional<eval_result>& eval) const {
  auto steps = nlohmann::json::array();
  for (const auto& s : steps_) {
    nlohmann::json entry = {{"step", s.step}, {"loss", s.loss}};
    if (s.step > 1)
      entry["samples_per_sec"] = s.samples_per_sec();
    steps.push_back(std::move(entry));
  }
  nlohmann::json out = {
    {"steps", std::move(steps)},
    {"samples_per_sec", samples_per_sec()},
    {"wall_s", wall_seconds()},
    {"peak_rss_mb", peak_rss_mb()},
    {"config", config},
  };
  if (eval)
    out["eval"] = {{"loss", eval->loss}, {"accuracy", eval->accuracy}, {"samples", eval->samples}};
  return out;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0; // Linux reports KiB
}

void write_json(const nlohmann::json& value, const std::string& path) {
  std::ofstream out(path);
  out << value.dump(2) << '\n';
  if (!out.flush())
    throw error(path + ": cannot write metrics");
}

} // namespace pe

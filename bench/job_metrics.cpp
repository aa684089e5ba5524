#include "bench/job_metrics.hpp"

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

namespace pe::bench {

std::optional<double> job_samples_per_sec(benchmark::State& state, const std::string& command,
                                          const std::string& metrics) {
  if (std::system((command + " > /dev/null 2>&1").c_str()) != 0) {
    state.SkipWithError(("the job failed: " + command).c_str());
    return std::nullopt;
  }
  std::ifstream in(metrics);
  const auto json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.contains("samples_per_sec") || !json["samples_per_sec"].is_number()) {
    state.SkipWithError(("no samples_per_sec in " + metrics + " after: " + command).c_str());
    return std::nullopt;
  }
  return json["samples_per_sec"].get<double>();
}

} // namespace pe::bench

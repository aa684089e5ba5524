#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pe {

/// Test-set results: sample-weighted means over all test batches.
struct eval_result {
  double loss = 0;
  double accuracy = 0;
  std::int64_t samples = 0;
};

/// The timeline of a training run. Each step's time runs from the end of the previous
/// step (or `start()`) to its `record`, so the steps' times add up to the wall time.
/// Step 1 is warm-up (first touches of memory, lazy allocations) and is left out of the
/// throughput.
class run_metrics {
 public:
  struct step_record {
    std::int64_t step;
    double loss;
    std::int64_t samples;
    double seconds;

    double samples_per_sec() const {
      return seconds > 0 ? static_cast<double>(samples) / seconds : 0.0;
    }
  };

  /// Starts the clock for step 1.
  void start();

  /// Ends the current step.
  const step_record& record(double loss, std::int64_t samples);

  const std::vector<step_record>& steps() const { return steps_; }

  /// Samples per second over steps 2..N; over step 1 when it is the only one.
  double samples_per_sec() const;

  /// Seconds from start() to the last record.
  double wall_seconds() const;

  /// The metrics file's object: steps, samples_per_sec, wall_s, peak_rss_mb, config and,
  /// when given, eval.
  nlohmann::json to_json(const nlohmann::json& config,
                         const std::optional<eval_result>& eval) const;

 private:
  using clock = std::chrono::steady_clock;

  clock::time_point start_;
  clock::time_point last_;
  std::vector<step_record> steps_;
};

/// The process's peak resident set size in MiB (getrusage's ru_maxrss).
double peak_rss_mb();

/// Writes `value` to `path` (indented); throws pe::error when the file cannot be written.
void write_json(const nlohmann::json& value, const std::string& path);

} // namespace pe

#pragma once

#include <optional>
#include <string>

#include <benchmark/benchmark.h>

namespace pe::bench {

/// Runs a training job through the shell (`command`, its output discarded; it must write
/// pe-actor-run's --metrics JSON to `metrics`) and returns the job's samples_per_sec from
/// that file. When the job fails or the file lacks the number, marks `state` as failed
/// (naming the command) and returns nullopt, so the rows that need it are left out.
std::optional<double> job_samples_per_sec(benchmark::State& state, const std::string& command,
                                          const std::string& metrics);

} // namespace pe::bench

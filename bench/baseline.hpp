#pragma once

#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace pe::bench {

/// Runs a PyTorch baseline script once: `command` through the shell with its stderr joined
/// to stdout (`command 2>&1`), returning the number written right after each of `keys`
/// (e.g. "samples_per_s=") in its output, in the order of `keys`. When the command cannot
/// start, exits nonzero or leaves a key out, it marks `state` as failed with
/// "PyTorch baseline failed (<command>): <output>" and returns nullopt, so the benchmark
/// (and the table rows that need it) is left out.
std::optional<std::vector<double>> run_torch_baseline(benchmark::State& state,
                                                      const std::string& command,
                                                      const std::vector<std::string>& keys);

} // namespace pe::bench

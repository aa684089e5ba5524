#pragma once

#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace pe::bench {

/// The shell command that runs `script_and_arguments` (a PyTorch baseline script and its
/// flags) under /usr/bin/python3 with `threads` threads in each of its pools.
/// torch.set_num_threads covers torch's own pool only: Debian's torch (BLAS_INFO=generic)
/// calls the system OpenBLAS, whose pthreads pool takes every core unless
/// OPENBLAS_NUM_THREADS says otherwise (measured: mlp_torch.py "on one thread" at batch 256
/// used 1.8 cores and ran 125k samples/s, 82k with the variable set).
std::string torch_command(int threads, const std::string& script_and_arguments);

/// Runs a PyTorch baseline script once: `command` through the shell with its stderr joined
/// to stdout (`command 2>&1`), returning the number written right after each of `keys`
/// (e.g. "samples_per_s=") in its output, in the order of `keys`. When the command cannot
/// start, exits nonzero or leaves a key out, it marks `state` as failed with
/// "PyTorch baseline failed (<command>): <output>" and returns nullopt, so the benchmark
/// (and the table rows that need it) is left out.
std::optional<std::vector<double>> run_torch_baseline(benchmark::State& state,
                                                      const std::string& command,
                                                      const std::vector<std::string>& keys);

/// The body of a PyTorch baseline benchmark: runs `command` once per iteration and sets the
/// counter `counter` to the samples/s it printed last ("samples_per_s="); on failure the
/// benchmark is skipped with run_torch_baseline's message.
void time_torch_baseline(benchmark::State& state, const std::string& command, const std::string& counter);

} // namespace pe::bench

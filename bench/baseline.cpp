#include "bench/baseline.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace pe::bench {

std::string torch_command(int threads, const std::string& script_and_arguments) {
  const std::string n = std::to_string(threads);
  return "OPENBLAS_NUM_THREADS=" + n + " OMP_NUM_THREADS=" + n + " /usr/bin/python3 " + script_and_arguments;
}

std::optional<std::vector<double>> run_torch_baseline(benchmark::State& state,
                                                      const std::string& command,
                                                      const std::vector<std::string>& keys) {
  const std::string joined = command + " 2>&1";
  FILE* pipe = popen(joined.c_str(), "r");
  std::string output;
  char buffer[256];
  while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pipe != nullptr ? pclose(pipe) : -1;
  std::vector<double> values;
  for (const std::string& key : keys) {
    const auto at = output.find(key);
    if (at == std::string::npos) break;
    values.push_back(std::atof(output.c_str() + at + key.size()));
  }
  if (status != 0 || values.size() != keys.size()) {
    state.SkipWithError(("PyTorch baseline failed (" + joined + "): " + output).c_str());
    return std::nullopt;
  }
  return values;
}

void time_torch_baseline(benchmark::State& state, const std::string& command, const std::string& counter) {
  double samples_per_s = 0;
  for (auto _ : state) {
    const auto values = run_torch_baseline(state, command, {"samples_per_s="});
    if (!values) return;
    samples_per_s = (*values)[0];
  }
  state.counters[counter] = samples_per_s;
}

} // namespace pe::bench

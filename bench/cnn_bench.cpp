// Training throughput (samples/s) of the built-in CNN (graph/models/cnn.hpp defaults: two
// conv-bn-relu-pool blocks, fc 120-84-10, momentum) on 1 and N places, against PyTorch
// (Debian python3-torch, bench/cnn_torch.py) training the same model at the same batch with
// as many threads as places, measured in the same run. Every step feeds one fixed random
// batch and fetches the loss, in both engines.
//
// Usage: cnn_bench [--places=N] [--benchmark_* flags]   (N defaults to 2)
// PyTorch rows are left out, with a note on stderr, when /usr/bin/python3 cannot import torch.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "bench/report.hpp"
#include "graph/models/cnn.hpp"

namespace {

using namespace pe;

const cnn_config config; // the defaults

feed_map random_batch(const model_programs& m, std::int64_t rows) {
  std::mt19937 generator(7);
  tensor image(dtype::fp32, {rows, 1, config.image_side, config.image_side});
  std::uniform_real_distribution<float> feature(-1.f, 1.f);
  for (float& x : image.values<float>()) x = feature(generator);
  tensor label(dtype::int64, {rows, 1});
  std::uniform_int_distribution<std::int64_t> category(0, config.classes - 1);
  for (std::int64_t& y : label.values<std::int64_t>()) y = category(generator);
  return {{m.image, image}, {m.label, label}};
}

void actor(benchmark::State& state, int places, std::int64_t batch) {
  const model_programs m = build_cnn(config);
  const feed_map feeds = random_batch(m, batch);
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::cpu(p));
  parallel_executor exe(where, m.startup, m.main);
  exe.run(feeds, {m.loss}); // the first run builds the graph and spawns the actors
  for (auto _ : state) exe.run(feeds, {m.loss});
  state.SetItemsProcessed(state.iterations() * batch);
}

/// Runs bench/cnn_torch.py for `seconds` and reports its samples/s as the counter
/// items_per_second; skips the benchmark when the script fails (no torch).
void torch(benchmark::State& state, int threads, std::int64_t batch) {
  const std::string command = "/usr/bin/python3 " PE_SOURCE_DIR "/bench/cnn_torch.py --batch " +
                              std::to_string(batch) + " --threads " + std::to_string(threads) +
                              " --seconds 3 2>&1";
  double samples_per_s = 0;
  for (auto _ : state) {
    FILE* pipe = popen(command.c_str(), "r");
    std::string output;
    char buffer[256];
    while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    const int status = pipe != nullptr ? pclose(pipe) : -1;
    const auto at = output.find("samples_per_s=");
    if (status != 0 || at == std::string::npos) {
      state.SkipWithError(("PyTorch baseline failed (" + command + "): " + output).c_str());
      return;
    }
    samples_per_s = std::atof(output.c_str() + at + 14);
  }
  state.counters["items_per_second"] = samples_per_s;
}

} // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const int places = bench::take_places(argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (places < 2) {
    std::cerr << "cnn_bench: --places must be at least 2\n";
    return 1;
  }
  const bench::metric throughput{"items_per_second", "samples/s", 1};
  const std::string model = "training throughput (cnn: 2 x conv-bn-relu-pool, fc 120-84-10)";
  std::vector<bench::comparison> rows;
  const std::int64_t batch = 64;
  for (int p : {1, places}) {
    const std::int64_t total = batch * p;
    const std::string suffix = "/batch:" + std::to_string(total);
    const std::string ours = "train_cnn/actor/places:" + std::to_string(p) + suffix;
    const std::string theirs = "train_cnn/torch/threads:" + std::to_string(p) + suffix;
    benchmark::RegisterBenchmark(ours.c_str(), actor, p, total)->UseRealTime();
    benchmark::RegisterBenchmark(theirs.c_str(), torch, p, total)->Iterations(1)->Repetitions(1);
    rows.push_back({model,
                    "actor executor, " + std::to_string(p) + " place(s) vs PyTorch " +
                        std::to_string(p) + " thread(s), batch " + std::to_string(total),
                    ours, theirs, "PyTorch (python3-torch)", throughput});
  }
  bench::run_and_report(rows);
}

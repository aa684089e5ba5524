// Training throughput (samples/s) of the built-in CNN (graph/models/cnn.hpp defaults: two
// conv-bn-relu-pool blocks, fc 120-84-10, momentum) on 1 and N places, against PyTorch
// (Debian python3-torch, bench/cnn_torch.py) training the same model at the same batch with
// as many threads as places, measured in the same run. Every step feeds one fixed random
// batch and fetches the loss, in both engines.
//
// Usage: cnn_bench [--places=N] [--benchmark_* flags]   (N defaults to 2)
// PyTorch rows are left out, with a note on stderr, when /usr/bin/python3 cannot import torch.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/baseline.hpp"
#include "bench/report.hpp"
#include "bench/training.hpp"
#include "graph/models/cnn.hpp"

namespace {

using namespace pe;

const cnn_config config; // the defaults

void actor(benchmark::State& state, int places, std::int64_t batch) {
  const model_programs m = build_cnn(config);
  const feed_map feeds =
      bench::random_batch(m, {batch, 1, config.image_side, config.image_side}, config.classes);
  bench::time_actor_training(state, m, bench::cpu_places(places), feeds, batch);
}

/// Runs bench/cnn_torch.py for 3 s and reports its samples/s as the counter
/// items_per_second; skips the benchmark when the script fails (no torch).
void torch(benchmark::State& state, int threads, std::int64_t batch) {
  const std::string command =
      bench::torch_command(threads, PE_SOURCE_DIR "/bench/cnn_torch.py --batch " + std::to_string(batch) +
                                        " --threads " + std::to_string(threads) + " --seconds 3");
  bench::time_torch_baseline(state, command, "items_per_second");
}

} // namespace

int main(int argc, char** argv) {
  const std::optional<int> parsed = bench::initialize_with_places(argc, argv, "cnn_bench");
  if (!parsed) return 1;
  const int places = *parsed;
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

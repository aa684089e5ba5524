// Training throughput (samples/s) of the default MLP (784-256-128-10, SGD): the actor
// executor on 1 and N places at the same batch per place (global batch b and b * N), and the
// actor executor against the reference executor on one place, and against PyTorch eager
// (Debian python3-torch, bench/mlp_torch.py under /usr/bin/python3; left out without it) with
// one thread on one place. Every step feeds the same random batch and fetches the loss, in
// every engine. The actor executor runs one CAF worker per core (its default) and, like the
// reference executor, one BLAS thread per GEMM.
//
// Usage: training_bench [--places=N] [--benchmark_* flags]   (N defaults to 2)
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/baseline.hpp"
#include "bench/report.hpp"
#include "bench/training.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/models/mlp.hpp"

namespace {

using namespace pe;

const mlp_config config; // the defaults: 784-256-128-10, SGD

/// `rows` samples of uniform [-1, 1) features with uniformly random labels.
feed_map mlp_batch(const model_programs& m, std::int64_t rows) {
  return bench::random_batch(m, {rows, config.input_width}, config.classes);
}

void reference(benchmark::State& state, std::int64_t batch) {
  const model_programs m = build_mlp(config);
  const feed_map feeds = mlp_batch(m, batch);
  scope vars;
  reference_executor(m.startup, vars).run({}, {});
  reference_executor exe(m.main, vars);
  exe.run(feeds, {m.loss});
  for (auto _ : state) exe.run(feeds, {m.loss});
  state.SetItemsProcessed(state.iterations() * batch);
}

void actor(benchmark::State& state, int places, std::int64_t batch) {
  const model_programs m = build_mlp(config);
  bench::time_actor_training(state, m, bench::cpu_places(places), mlp_batch(m, batch), batch);
}

/// Runs bench/mlp_torch.py on one thread for 3 s and reports its samples/s as the counter
/// items_per_second; skips the benchmark when the script fails (no torch).
void torch(benchmark::State& state, std::int64_t batch) {
  const std::string command = bench::torch_command(
      1, PE_SOURCE_DIR "/bench/mlp_torch.py --device cpu --threads 1 --batch " + std::to_string(batch) + " --seconds 3");
  bench::time_torch_baseline(state, command, "items_per_second");
}

std::string name_of(int places, std::int64_t batch) {
  return "train/actor/places:" + std::to_string(places) + "/batch:" + std::to_string(batch);
}

} // namespace

int main(int argc, char** argv) {
  const std::optional<int> parsed = bench::initialize_with_places(argc, argv, "training_bench");
  if (!parsed) return 1;
  const int places = *parsed;

  const bench::metric throughput{"items_per_second", "samples/s", 1};
  const std::string n = std::to_string(places);
  std::vector<bench::comparison> rows;
  for (std::int64_t batch : {64, 256}) {
    const std::string b = std::to_string(batch), global = std::to_string(batch * places);
    const std::string reference_name = "train/reference/batch:" + b;
    benchmark::RegisterBenchmark(reference_name.c_str(), reference, batch)->UseRealTime();
    const std::string torch_name = "train/torch/threads:1/batch:" + b;
    benchmark::RegisterBenchmark(torch_name.c_str(), torch, batch)->Iterations(1)->Repetitions(1);
    for (int p : {1, places}) {
      const std::int64_t total = batch * p;
      benchmark::RegisterBenchmark(name_of(p, total).c_str(), actor, p, total)->UseRealTime();
    }
    rows.push_back({"training throughput (mlp 784-256-128-10, sgd)",
                    "actor executor, " + n + " places vs 1, batch " + b + " per place (global " +
                        global + " vs " + b + ")",
                    name_of(places, batch * places), name_of(1, batch),
                    "actor executor, 1 place", throughput});
    rows.push_back({"training throughput (mlp 784-256-128-10, sgd)",
                    "actor vs reference executor, 1 place, batch " + b, name_of(1, batch),
                    reference_name, "reference executor", throughput});
    rows.push_back({"training throughput (mlp 784-256-128-10, sgd)",
                    "actor executor, 1 place vs PyTorch eager, 1 thread, batch " + b, name_of(1, batch),
                    torch_name, "PyTorch (python3-torch)", throughput});
  }
  bench::run_and_report(rows);
}

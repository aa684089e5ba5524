// What the stall watch costs a real run: training throughput (samples/s) of the default MLP
// (784-256-128-10, SGD) on the actor executor with the watch on (--stall-timeout's default,
// 300 s) against the same run with it off (0). On, the thread that runs a step waits in
// bounded waits (a timed wait per stream; a look at the step only when a wait outlasts the
// tick, once a second at most) and every firing and finished node bumps a relaxed counter;
// the target is <= 1%.
//
// The two executors run in one benchmark, alternating rounds of 10 steps (the order of the
// pair swapped every round), so that both see the same machine: on a shared 2-core machine
// two benchmarks run one after the other differ by tens of percent on their own. A control
// row runs the same pairing with the watch off on both sides: how far from 1.00x the
// harness itself lands.
//
// Usage: stall_watch_bench [--places=N] [--benchmark_* flags]   (N defaults to 2)
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/report.hpp"
#include "bench/training.hpp"
#include "graph/models/mlp.hpp"

namespace {

using namespace pe;

const mlp_config config; // the defaults: 784-256-128-10, SGD
constexpr int round_steps = 10;

/// Counters "watched" and "unwatched": samples/s of each executor over the rounds it ran.
/// `control`: the first executor's watch is off too.
void paired(benchmark::State& state, int places, std::int64_t batch, bool control) {
  const model_programs m = build_mlp(config);
  const feed_map feeds = bench::random_batch(m, {batch, config.input_width}, config.classes);
  execution_strategy on, off;
  on.stall_timeout_s = control ? 0 : default_stall_timeout_s;
  off.stall_timeout_s = 0;
  parallel_executor watched(bench::cpu_places(places), m.startup, m.main, {}, on);
  parallel_executor unwatched(bench::cpu_places(places), m.startup, m.main, {}, off);
  watched.run(feeds, {m.loss}); // builds the graph, spawns the actors
  unwatched.run(feeds, {m.loss});
  double seconds[2] = {0, 0}; // [watched, unwatched]
  std::int64_t rounds = 0;
  for (auto _ : state) {
    for (int k = 0; k < 2; ++k) {
      const int which = (k + static_cast<int>(rounds)) % 2;
      parallel_executor& exe = which == 0 ? watched : unwatched;
      const auto start = std::chrono::steady_clock::now();
      for (int s = 0; s < round_steps; ++s) exe.run(feeds, {m.loss});
      seconds[which] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    ++rounds;
  }
  const double samples = static_cast<double>(rounds * round_steps * batch);
  state.counters["watched"] = samples / seconds[0];
  state.counters["unwatched"] = samples / seconds[1];
}

std::string name_of(int places, std::int64_t batch, bool control) {
  return std::string("train/") + (control ? "control" : "paired") + "/places:" + std::to_string(places) +
         "/batch:" + std::to_string(batch);
}

} // namespace

int main(int argc, char** argv) {
  const std::optional<int> parsed = bench::initialize_with_places(argc, argv, "stall_watch_bench");
  if (!parsed) return 1;
  const int places = *parsed;
  const bench::metric throughput{"watched", "samples/s", 1};
  std::vector<bench::comparison> rows;
  for (int p : {1, places})
    for (std::int64_t batch : {64, 256}) {
      const std::int64_t total = batch * p;
      for (bool control : {false, true}) {
        const std::string name = name_of(p, total, control);
        benchmark::RegisterBenchmark(name.c_str(), paired, p, total, control)->UseRealTime();
        rows.push_back({"stall watch (mlp 784-256-128-10, sgd)",
                        "actor executor, " + std::to_string(p) + " place" + (p == 1 ? "" : "s") +
                            ", global batch " + std::to_string(total) +
                            (control ? ", control: watch off vs off, alternating" : ", watch on (300 s) vs off, alternating"),
                        name, name, "watch off", throughput, "unwatched"});
      }
    }
  bench::run_and_report(rows);
}

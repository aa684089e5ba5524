// What the stall watch costs a real run: training throughput (samples/s) of the default MLP
// (784-256-128-10, SGD) on the actor executor with the watch on (--stall-timeout's default,
// 300 s) against the same run with it off (0), measured in the same run. On, the thread
// that runs a step waits in bounded waits (a timed wait per stream; a tick only when a wait
// outlasts it, so once a second at most) and every firing and finished node bumps a relaxed
// counter; the target is <= 1%.
//
// Usage: stall_watch_bench [--places=N] [--benchmark_* flags]   (N defaults to 2)
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

void train(benchmark::State& state, int places, std::int64_t batch, double stall_timeout_s) {
  const model_programs m = build_mlp(config);
  execution_strategy exec;
  exec.stall_timeout_s = stall_timeout_s;
  bench::time_actor_training(state, m, bench::cpu_places(places),
                             bench::random_batch(m, {batch, config.input_width}, config.classes), batch, 1,
                             exec);
}

std::string name_of(int places, std::int64_t batch, bool watched) {
  return std::string("train/") + (watched ? "watched" : "unwatched") + "/places:" + std::to_string(places) +
         "/batch:" + std::to_string(batch);
}

} // namespace

int main(int argc, char** argv) {
  const std::optional<int> parsed = bench::initialize_with_places(argc, argv, "stall_watch_bench");
  if (!parsed) return 1;
  const int places = *parsed;
  const bench::metric throughput{"items_per_second", "samples/s", 1};
  std::vector<bench::comparison> rows;
  for (int p : {1, places})
    for (std::int64_t batch : {64, 256}) {
      const std::int64_t total = batch * p;
      for (bool watched : {false, true})
        benchmark::RegisterBenchmark(name_of(p, total, watched).c_str(), train, p, total,
                                     watched ? default_stall_timeout_s : 0.0)
            ->UseRealTime();
      rows.push_back({"stall watch (mlp 784-256-128-10, sgd)",
                      "actor executor, " + std::to_string(p) + " place" + (p == 1 ? "" : "s") + ", global batch " +
                          std::to_string(total) + ", watch on (300 s) vs off",
                      name_of(p, total, true), name_of(p, total, false), "watch off", throughput});
    }
  bench::run_and_report(rows);
}

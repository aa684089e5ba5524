// CPU all-reduce bandwidth across 2 places, 4 KiB to 64 MiB per place, against memcpy of
// the same bytes. The all-reduce is a pe::cpu_collective cut into chunks as the actor
// executor cuts it for its chunk workers (chunk_count for 2 workers), the chunks run by 2
// threads. Bandwidth is one place's buffer bytes per second (NCCL's "algorithm bandwidth"):
// the all-reduce reads 2 such buffers and writes 2, one thread's memcpy reads 1 and writes 1.
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/report.hpp"
#include "collectives/cpu/cpu_collective.hpp"

namespace {

using namespace pe;

constexpr std::size_t workers = 2;

/// Runs one collective per round on two threads, like the executor's two chunk-worker actors:
/// the calling thread runs chunk 0 and a helper thread chunk 1 when there is one. Every
/// round wakes the helper, as the executor messages a worker for every collective.
class chunk_team {
 public:
  explicit chunk_team(const cpu_collective& task)
      : task_(task), parts_(chunk_count(task.total_elements(), workers)),
        helper_([this] { help(); }) {}

  ~chunk_team() {
    stop_ = true; // published to the helper by the barrier
    start_.arrive_and_wait();
    helper_.join();
  }

  void run() {
    start_.arrive_and_wait();
    task_.run_chunk(0, parts_);
    done_.arrive_and_wait();
  }

 private:
  void help() {
    for (;;) {
      start_.arrive_and_wait();
      if (stop_) return;
      if (parts_ > 1) task_.run_chunk(1, parts_);
      done_.arrive_and_wait();
    }
  }

  const cpu_collective& task_;
  const std::size_t parts_;
  bool stop_ = false;
  std::barrier<> start_{2};
  std::barrier<> done_{2};
  std::thread helper_; // last: starts once the members above exist
};

void all_reduce(benchmark::State& state, std::size_t bytes) {
  const std::size_t n = bytes / sizeof(float);
  // Zeros stay zeros however many rounds run (no overflow, no denormals).
  std::vector<float> place0(n), place1(n);
  cpu_collective task;
  task.buffers = {{place0.data(), place1.data()}};
  task.sizes = {n};
  chunk_team team(task);
  team.run();
  for (auto _ : state) team.run();
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void copy(benchmark::State& state, std::size_t bytes) {
  std::vector<char> from(bytes), to(bytes);
  std::memcpy(to.data(), from.data(), bytes);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

/// "4 KiB", "16 MiB".
std::string size_name(std::size_t bytes) {
  return bytes < (1u << 20) ? std::to_string(bytes >> 10) + " KiB"
                            : std::to_string(bytes >> 20) + " MiB";
}

} // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const bench::metric bandwidth{"bytes_per_second", "GB/s", 1e-9};
  std::vector<bench::comparison> rows;
  for (std::size_t bytes = 4u << 10; bytes <= 64u << 20; bytes *= 4) {
    const std::string size = std::to_string(bytes);
    const std::string reduce_name = "allreduce/bytes:" + size, copy_name = "memcpy/bytes:" + size;
    benchmark::RegisterBenchmark(reduce_name.c_str(), all_reduce, bytes)->UseRealTime();
    benchmark::RegisterBenchmark(copy_name.c_str(), copy, bytes)->UseRealTime();
    rows.push_back({"CPU all-reduce, 2 places, 2 chunk threads", size_name(bytes) + " per place",
                    reduce_name, copy_name, "memcpy, 1 thread", bandwidth});
  }
  bench::run_and_report(rows);
}

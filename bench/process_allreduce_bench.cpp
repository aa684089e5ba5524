// All-reduce bandwidth across 2 and 3 processes, 64 KiB to 64 MiB per process: the engine's
// own backends ("caf": CAF networking, its packets over data links of their own; "caf_messages":
// the same with every packet a CAF message, as before the data links and as with TLS; "shm":
// shared memory, the processes being on one host) against Gloo's TCP transport ("gloo"),
// measured in the same run, one after the other, on
// 127.0.0.1. The "processes" are process
// groups in this process, each joined through CAF networking with its own actor system and
// sockets (bench/joined_processes.hpp), one CPU place each, running the communicator that
// training runs: what a collective of a multi-process job costs on the wire and in the
// backend. Bandwidth is one process's buffer bytes per second (NCCL's "algorithm
// bandwidth").
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/resource.h>

#include "bench/joined_processes.hpp"
#include "bench/report.hpp"
#include "collectives/process_backend.hpp"

namespace {

using namespace pe;

/// The job of the benchmark running now: one at a time, so that no idle job's threads
/// share the cores with the one measured (joining costs about a second, outside the timing).
bench::joined_processes& job(int processes, const std::string& backend) {
  static std::pair<int, std::string> current;
  static std::unique_ptr<bench::joined_processes> j;
  if (!j || current != std::make_pair(processes, backend)) {
    j.reset();
    const bool messages = backend == "caf_messages";
    j = std::make_unique<bench::joined_processes>(
        bench::job_options{processes, messages ? "caf" : backend, {}, !messages});
    current = {processes, backend};
  }
  return *j;
}

/// User and system CPU seconds of this process's threads so far.
double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

void all_reduce(benchmark::State& state, int processes, std::string backend, std::size_t bytes) {
  auto& j = job(processes, backend);
  const auto n = static_cast<std::int64_t>(bytes / sizeof(float));
  // Zeros stay zeros however many rounds run (no overflow, no denormals).
  std::vector<tensor> buffers;
  for (int r = 0; r < processes; ++r) buffers.push_back(tensor::zeros(dtype::fp32, {n}));
  j.all_reduce(buffers);
  const double cpu_before = process_cpu_seconds();
  for (auto _ : state) j.all_reduce(buffers);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  // CPU time of every thread of every "process" per all-reduce: what the backend costs,
  // whatever else the machine runs (wall time also counts waiting for a core).
  state.counters["cpu_s_per_op"] = (process_cpu_seconds() - cpu_before) / static_cast<double>(state.iterations());
}

} // namespace

int main(int argc, char** argv) {
  if (!bench::initialize(argc, argv)) return 1;
  const bench::metric bandwidth{"bytes_per_second", "GB/s", 1e-9};
  const bench::metric cpu_time{"cpu_s_per_op", "ms/op", 1e3};
  bool with_gloo = false; // a build without Gloo measures the caf backend alone
  for (const process_backend& b : process_backends()) with_gloo = with_gloo || b.name == "gloo";
  std::vector<bench::comparison> rows;
  for (int processes : {2, 3})
    for (std::size_t bytes = 64u << 10; bytes <= 64u << 20; bytes *= 4) {
      const std::string suffix = "/processes:" + std::to_string(processes) + "/bytes:" + std::to_string(bytes);
      const std::string caf = "allreduce_caf" + suffix, gloo = "allreduce_gloo" + suffix,
                        shm = "allreduce_shm" + suffix, messages = "allreduce_caf_messages" + suffix;
      benchmark::RegisterBenchmark(caf.c_str(), all_reduce, processes, "caf", bytes)->UseRealTime();
      benchmark::RegisterBenchmark(messages.c_str(), all_reduce, processes, "caf_messages", bytes)->UseRealTime();
      benchmark::RegisterBenchmark(shm.c_str(), all_reduce, processes, "shm", bytes)->UseRealTime();
      if (with_gloo) benchmark::RegisterBenchmark(gloo.c_str(), all_reduce, processes, "gloo", bytes)->UseRealTime();
      rows.push_back({"all-reduce across " + std::to_string(processes) + " processes, caf backend vs Gloo",
                      bench::size_name(bytes) + " per process", caf, gloo, "gloo backend", bandwidth});
      rows.push_back({"all-reduce across " + std::to_string(processes) + " processes, CPU time (all threads)",
                      bench::size_name(bytes) + " per process", caf, gloo, "gloo backend", cpu_time});
      rows.push_back({"all-reduce across " + std::to_string(processes) + " processes, caf: data links vs CAF messages",
                      bench::size_name(bytes) + " per process", caf, messages, "every packet a CAF message", bandwidth});
      rows.push_back({"all-reduce across " + std::to_string(processes) + " processes, shm backend vs Gloo",
                      bench::size_name(bytes) + " per process", shm, gloo, "gloo backend", bandwidth});
    }
  bench::run_and_report(rows);
}

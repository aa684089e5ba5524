// MLP training across processes against the same places in one process and against PyTorch
// DDP, each in the same run on 127.0.0.1: the default MLP (784-256-128-10, SGD), global batch
// 512, synthetic data, the loss fetched every step, samples/s from --metrics (steps 2..N):
//  - 2 processes x 1 place (pe-actor-launch --nproc 2) with the default backend ("auto":
//    shared memory between the two processes, both being on this host), and with the caf
//    backend (sockets), with and without gradient buckets (--fuse-allreduce-mb 4), against
//    1 process x 2 places (pe-actor-run --places cpu:2);
//  - the same 2-process job against PyTorch DDP over gloo, 2 processes of 256 rows and one
//    thread each (bench/mlp_ddp_torch.py under /usr/bin/python3; left out, with a note on
//    stderr, where that interpreter cannot import torch).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/baseline.hpp"
#include "bench/job_metrics.hpp"
#include "bench/report.hpp"

namespace {

using namespace pe;
namespace fs = std::filesystem;

constexpr int steps = 300;
const fs::path scratch = fs::temp_directory_path() / ("pe-process-training-bench-" + std::to_string(::getpid()));

const std::string run_flags = " --model mlp --steps " + std::to_string(steps) + " --batch-size 512";

void job(benchmark::State& state, const std::string& name, const std::string& command_without_metrics) {
  fs::create_directories(scratch);
  const std::string metrics = (scratch / (name + ".json")).string();
  const std::string command = command_without_metrics + " --metrics " + metrics;
  double samples = 0;
  for (auto _ : state) {
    const auto measured = bench::job_samples_per_sec(state, command, metrics);
    if (!measured) return;
    samples = *measured;
  }
  state.counters["samples_per_sec"] = samples;
}

void two_processes(benchmark::State& state, int fuse_mb, std::string backend) {
  job(state, "processes-" + std::to_string(fuse_mb) + "-" + backend,
      "PE_ACTOR_RUN=" PE_RUN_BINARY " " PE_LAUNCH_BINARY " --nproc 2 --" + run_flags +
          " --places cpu:1 --fuse-allreduce-mb " + std::to_string(fuse_mb) +
          (backend.empty() ? std::string() : " --collective-backend " + backend));
}

void one_process(benchmark::State& state) {
  job(state, "places", PE_RUN_BINARY + run_flags + " --places cpu:2");
}

void ddp(benchmark::State& state) {
  // One thread in each of the 2 processes (mlp_ddp_torch.py's own torch.set_num_threads(1),
  // and its BLAS's: the environment is inherited by the processes it starts).
  const std::string command = bench::torch_command(
      1, PE_SOURCE_DIR "/bench/mlp_ddp_torch.py --processes 2 --batch 256 --steps " + std::to_string(steps));
  bench::time_torch_baseline(state, command, "samples_per_sec");
}

bool torch_importable() {
  return std::system("/usr/bin/python3 -c 'import torch.distributed' > /dev/null 2>&1") == 0;
}

} // namespace

int main(int argc, char** argv) {
  if (!bench::initialize(argc, argv)) return 1;
  const bench::metric throughput{"samples_per_sec", "samples/s", 1};
  const std::string what = "MLP training, batch 512, 300 steps";
  // The default backend: no --collective-backend flag.
  benchmark::RegisterBenchmark("mlp/processes:2x1", two_processes, 0, "")->Iterations(1)->UseRealTime();
  benchmark::RegisterBenchmark("mlp/processes:2x1/caf", two_processes, 0, "caf")->Iterations(1)->UseRealTime();
  benchmark::RegisterBenchmark("mlp/processes:2x1/caf/fused", two_processes, 4, "caf")->Iterations(1)->UseRealTime();
  benchmark::RegisterBenchmark("mlp/processes:1x2", one_process)->Iterations(1)->UseRealTime();
  std::vector<bench::comparison> rows = {
      {what, "2 processes x 1 place (default backend) vs 1 process x 2 places", "mlp/processes:2x1",
       "mlp/processes:1x2", "1 process x 2 places", throughput},
      {what, "2 processes x 1 place, caf backend, vs 1 process x 2 places", "mlp/processes:2x1/caf",
       "mlp/processes:1x2", "1 process x 2 places", throughput},
      {what, "2 processes x 1 place, caf backend, 4 MB buckets, vs 1 process x 2 places",
       "mlp/processes:2x1/caf/fused", "mlp/processes:1x2", "1 process x 2 places", throughput},
  };
  if (torch_importable()) {
    benchmark::RegisterBenchmark("mlp/ddp_gloo", ddp)->Iterations(1)->UseRealTime();
    rows.push_back({what, "2 processes x 1 place (default backend) vs PyTorch DDP (gloo, 2 processes, 1 thread each)",
                    "mlp/processes:2x1", "mlp/ddp_gloo", "PyTorch DDP", throughput});
    rows.push_back({what, "2 processes x 1 place, caf backend, vs PyTorch DDP", "mlp/processes:2x1/caf",
                    "mlp/ddp_gloo", "PyTorch DDP", throughput});
    rows.push_back({what, "2 processes x 1 place, caf backend, 4 MB buckets, vs PyTorch DDP",
                    "mlp/processes:2x1/caf/fused", "mlp/ddp_gloo", "PyTorch DDP", throughput});
  } else {
    std::fprintf(stderr, "process_training_bench: /usr/bin/python3 cannot import torch: the PyTorch DDP rows are left out\n");
  }
  bench::run_and_report(rows);
  fs::remove_all(scratch);
}

// The GPU benchmark (issue 11, run by scripts/gpu_check.sh), all on gpu:0:
//  - training the default MLP (graph/models/mlp.hpp: 784-256-128-10, SGD lr 0.1) with the
//    actor executor on one place, batch 256 and 1024, and the built-in CNN
//    (graph/models/cnn.hpp defaults, momentum) at batch 64: samples/s and step time, against
//    PyTorch eager training the same model on the same GPU in the same run
//    (bench/mlp_torch.py and bench/cnn_torch.py --device cuda; the CNN also with --no-tf32,
//    as PyTorch's convolutions use TF32 by default and the engine's FP32). Both feed one fixed random
//    batch and fetch the loss to the host every step, so both wait for the device once per
//    step. One difference: the engine's feeds are host tensors, copied to the device every
//    step (on the copy stream, overlapping compute), while PyTorch keeps its batch on the GPU.
//  - two logical places on the one GPU (gpu:0x2, the shared-GPU communicator) against gpu:0
//    at the same global batch (MLP, 512: 256 per place), with one all-reduce per gradient
//    (the default) and with the gradients in 4 MB buckets (--fuse-allreduce-mb 4); and the
//    CNN at global batch 128 (64 per place), device-bound where the MLP is launch-bound.
//  - executor overhead: a chain of `scale` ops on a 1-element tensor (the idea of
//    bench/overhead_bench.cpp), so that a step is almost all scheduling. Two figures per op:
//    the untraced step time / ops (host scheduling and the GPU's launch and run of each tiny
//    kernel, whichever is slower), and, from a trace, the time from an op's input being
//    ready (its predecessor's work enqueued and its message sent) to its own kernel being
//    enqueued. Both are compared with the same chain on cpu:0, measured in the same run.
//
// Usage: gpu_bench [--benchmark_* flags]
// Without a GPU (no CUDA build, no driver, no device) it prints `gpu_bench: no GPU (...)` to
// stderr and exits 0 without running anything. The PyTorch interpreter is $PE_TORCH_PYTHON
// (default python3); when it cannot train on CUDA, the PyTorch rows are left out with the
// reason on stderr. The PyTorch scripts are read from $PE_SOURCE_DIR/bench when that is set
// (a binary built elsewhere, as scripts/gpu_check.sh --prebuilt runs it), else from the
// source tree this binary was built from.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/parallel_executor.hpp"
#include "actors/trace.hpp"
#include "bench/baseline.hpp"
#include "bench/report.hpp"
#include "bench/training.hpp"
#include "devices/gpu_runtime.hpp"
#include "graph/builder.hpp"
#include "graph/models/cnn.hpp"
#include "graph/models/mlp.hpp"

namespace {

using namespace pe;

const mlp_config config; // the defaults: 784-256-128-10, SGD lr 0.1

/// Steps run before timing: the first builds the graph and spawns the actors; the others
/// warm the caching allocator, cuBLAS and the kernels' first launches.
constexpr int warmup_steps = 10;

/// The counter step_time: real seconds per iteration (one step).
benchmark::Counter seconds_per_step() {
  return benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate |
                                   benchmark::Counter::kInvert);
}

void train_actor(benchmark::State& state, std::int64_t batch, int places, std::int64_t bucket_bytes) {
  const model_programs m = build_mlp(config);
  const feed_map feeds = bench::random_batch(m, {batch, config.input_width}, config.classes);
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::gpu(p, 0)); // logical place p on device 0
  build_strategy build;
  build.fuse_all_reduce_bytes = bucket_bytes;
  bench::time_actor_training(state, m, where, feeds, batch, warmup_steps, {}, build);
  state.counters["step_time"] = seconds_per_step();
}

const cnn_config cnn; // the defaults: 2 x conv-bn-relu-pool (32, 64), fc 120-84-10, momentum

void train_cnn_actor(benchmark::State& state, std::int64_t batch, int places) {
  const model_programs m = build_cnn(cnn);
  const feed_map feeds =
      bench::random_batch(m, {batch, 1, cnn.image_side, cnn.image_side}, cnn.classes);
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::gpu(p, 0)); // logical place p on device 0
  bench::time_actor_training(state, m, where, feeds, batch, warmup_steps);
  state.counters["step_time"] = seconds_per_step();
}

/// Training as time_actor_training, with execution_strategy::cuda_graphs: the warm-up steps
/// include the capture, so every timed step is a replay; a run that replayed nothing (the
/// capture failed) is reported as an error with the reason instead of a figure.
void train_graphs(benchmark::State& state, const model_programs& m, const std::vector<place>& where,
                  const feed_map& feeds, std::int64_t batch) {
  execution_strategy exec;
  exec.cuda_graphs = true;
  parallel_executor exe(where, m.startup, m.main, {}, exec);
  for (int i = 0; i < warmup_steps; ++i) exe.run(feeds, {m.loss});
  for (auto _ : state) exe.run(feeds, {m.loss});
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["step_time"] = seconds_per_step();
  const auto c = exe.cuda_graph_statistics();
  if (c.replays < static_cast<std::uint64_t>(state.iterations()))
    state.SkipWithError(("CUDA graphs: " + std::to_string(c.replays) + " replays in " +
                         std::to_string(state.iterations()) + " steps; " + c.off_reason).c_str());
}

std::vector<place> logical_places(int places) {
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::gpu(p, 0)); // logical place p on device 0
  return where;
}

void train_mlp_graphs(benchmark::State& state, std::int64_t batch, int places) {
  const model_programs m = build_mlp(config);
  train_graphs(state, m, logical_places(places), bench::random_batch(m, {batch, config.input_width}, config.classes),
               batch);
}

void train_cnn_graphs(benchmark::State& state, std::int64_t batch, int places) {
  const model_programs m = build_cnn(cnn);
  train_graphs(state, m, logical_places(places),
               bench::random_batch(m, {batch, 1, cnn.image_side, cnn.image_side}, cnn.classes), batch);
}

/// The folder of the PyTorch scripts: $PE_SOURCE_DIR/bench, else this source tree's.
std::string bench_dir() {
  const char* root = std::getenv("PE_SOURCE_DIR");
  return std::string(root != nullptr && *root != '\0' ? root : PE_SOURCE_DIR) + "/bench";
}

/// Runs bench/<script> on CUDA for a few seconds and reports its samples/s and step time
/// as the counters items_per_second and step_time; skips the benchmark when the script fails.
void train_torch(benchmark::State& state, const std::string& script, std::int64_t batch,
                 const std::string& flags) {
  const char* python = std::getenv("PE_TORCH_PYTHON");
  const std::string interpreter = python != nullptr && *python != '\0' ? python : "python3";
  const std::string command = interpreter + " " + bench_dir() + "/" + script +
                              " --device cuda --batch " + std::to_string(batch) +
                              " --seconds 3" + flags;
  double samples_per_s = 0, step_ms = 0;
  for (auto _ : state) {
    const auto values =
        bench::run_torch_baseline(state, command, {"samples_per_s=", "step_ms="});
    if (!values) return;
    samples_per_s = (*values)[0];
    step_ms = (*values)[1];
  }
  state.counters["items_per_second"] = samples_per_s;
  state.counters["step_time"] = step_ms / 1e3;
}

constexpr int chain_ops = 1000;

struct programs {
  proto::ProgramDesc startup;
  proto::ProgramDesc main;
};

/// chain_ops `scale` ops (by 1, so the value stays finite) in one chain from x, a persistable
/// 1-element tensor set by the startup program: a step needs no feed and fetches nothing, and
/// no two ops can run at once.
programs scale_chain() {
  programs p;
  program_builder b(p.main, p.startup, 1);
  std::string head = b.constant_state("x", {1}, 1.f);
  for (int i = 0; i < chain_ops; ++i) {
    std::string out = b.unique_name("scale");
    b.append_op("scale", {{"X", {head}}}, {{"Out", {out}}}, {{"scale", 1.f}});
    head = std::move(out);
  }
  return p;
}

/// Real time per op (step time / chain_ops) as the counter op_time, in seconds.
void chain_step(benchmark::State& state, const programs& p, place where) {
  parallel_executor exe({where}, p.startup, p.main);
  for (int i = 0; i < warmup_steps; ++i) exe.run({}, {});
  for (auto _ : state) exe.run({}, {});
  state.counters["op_time"] = benchmark::Counter(
      chain_ops, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// The gaps between consecutive enqueue times of the chain's ops, step by step: in a chain,
/// op i's input is ready when op i-1 has enqueued its work and sent its message, so each gap
/// is one op's time from input ready to kernel enqueued (message delivery included).
void add_enqueue_gaps(const trace_recorder& recorder, std::vector<std::int64_t>& gaps) {
  std::map<std::uint64_t, std::vector<std::int64_t>> by_step;
  for (const trace_event& e : recorder.events()) by_step[e.step].push_back(e.enqueued_ns);
  for (auto& [step, times] : by_step) {
    std::sort(times.begin(), times.end());
    for (std::size_t i = 1; i < times.size(); ++i) gaps.push_back(times[i] - times[i - 1]);
  }
}

/// The median gap from input ready to kernel enqueued, from traced steps, as the counter
/// enqueue_gap (seconds). The recorder is read and replaced every 20 steps, untimed.
void chain_enqueue(benchmark::State& state, const programs& p, place where) {
  parallel_executor exe({where}, p.startup, p.main);
  for (int i = 0; i < warmup_steps; ++i) exe.run({}, {});
  auto recorder = std::make_unique<trace_recorder>();
  exe.trace(recorder.get());
  std::vector<std::int64_t> gaps;
  int steps = 0;
  for (auto _ : state) {
    exe.run({}, {});
    if (++steps % 20 == 0) {
      state.PauseTiming();
      add_enqueue_gaps(*recorder, gaps);
      recorder = std::make_unique<trace_recorder>();
      exe.trace(recorder.get());
      state.ResumeTiming();
    }
  }
  exe.trace(nullptr);
  add_enqueue_gaps(*recorder, gaps);
  if (gaps.empty()) {
    state.SkipWithError("the trace recorded no consecutive firings");
    return;
  }
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2),
                   gaps.end());
  state.counters["enqueue_gap"] = static_cast<double>(gaps[gaps.size() / 2]) / 1e9;
}

} // namespace

int main(int argc, char** argv) {
  if (!bench::initialize(argc, argv)) return 1;
  const gpu_inventory gpus = query_gpus();
  if (gpus.count == 0) {
    std::cerr << "gpu_bench: no GPU (" << gpus.problem << ")\n";
    benchmark::Shutdown();
    return 0;
  }

  const bench::metric throughput{"items_per_second", "samples/s", 1};
  const bench::metric step_time{"step_time", "ms/step", 1e3};
  const std::string model = "mlp training on gpu:0 (784-256-128-10, SGD)";
  const std::string torch_label = "PyTorch eager, same GPU";
  std::vector<bench::comparison> rows;
  for (std::int64_t batch : {256, 1024}) {
    const std::string b = std::to_string(batch);
    const std::string ours = "train_mlp/actor/gpu:0/batch:" + b;
    const std::string theirs = "train_mlp/torch/cuda/batch:" + b;
    benchmark::RegisterBenchmark(ours.c_str(), train_actor, batch, 1, std::int64_t{0})->UseRealTime();
    benchmark::RegisterBenchmark(theirs.c_str(), train_torch, std::string("mlp_torch.py"), batch, std::string())
        ->Iterations(1)
        ->Repetitions(1);
    const std::string setup = "actor executor, 1 place vs PyTorch eager, batch " + b;
    rows.push_back({model + ", samples/s", setup, ours, theirs, torch_label, throughput});
    rows.push_back({model + ", step time", setup, ours, theirs, torch_label, step_time});
  }

  const std::string cnn_model = "cnn training on gpu:0 (2 x conv-bn-relu-pool, fc 120-84-10)";
  const std::string cnn_ours = "train_cnn/actor/gpu:0/batch:64";
  const std::string cnn_theirs = "train_cnn/torch/cuda/batch:64";
  benchmark::RegisterBenchmark(cnn_ours.c_str(), train_cnn_actor, 64, 1)->UseRealTime();
  benchmark::RegisterBenchmark(cnn_theirs.c_str(), train_torch, std::string("cnn_torch.py"), 64, std::string())
      ->Iterations(1)
      ->Repetitions(1);
  // PyTorch's cuDNN convolutions compute in TF32 by default; the engine's in FP32. Both rows.
  const std::string cnn_fp32 = "train_cnn/torch-no-tf32/cuda/batch:64";
  benchmark::RegisterBenchmark(cnn_fp32.c_str(), train_torch, std::string("cnn_torch.py"), 64,
                               std::string(" --no-tf32"))
      ->Iterations(1)
      ->Repetitions(1);
  const std::string cnn_setup = "actor executor, 1 place vs PyTorch eager, batch 64";
  rows.push_back({cnn_model + ", samples/s", cnn_setup, cnn_ours, cnn_theirs,
                  torch_label + " (its default TF32 convolutions)", throughput});
  rows.push_back({cnn_model + ", step time", cnn_setup, cnn_ours, cnn_theirs,
                  torch_label + " (its default TF32 convolutions)", step_time});
  rows.push_back({cnn_model + ", step time", cnn_setup + ", FP32 convolutions on both sides", cnn_ours,
                  cnn_fp32, torch_label + ", TF32 off", step_time});

  // Two logical places on the one GPU at the same global batch as one place.
  const std::string shared = "train_mlp/actor/gpu:0x2/batch:512";
  const std::string single = "train_mlp/actor/gpu:0/batch:512";
  const std::string bucketed = "train_mlp/actor/gpu:0x2-4MB-buckets/batch:512";
  benchmark::RegisterBenchmark(shared.c_str(), train_actor, 512, 2, std::int64_t{0})->UseRealTime();
  benchmark::RegisterBenchmark(bucketed.c_str(), train_actor, 512, 2, std::int64_t{4} << 20)->UseRealTime();
  benchmark::RegisterBenchmark(single.c_str(), train_actor, 512, 1, std::int64_t{0})->UseRealTime();
  rows.push_back({model + ", step time", "gpu:0x2 (256 per place) vs gpu:0, global batch 512",
                  shared, single, "gpu:0, one place", step_time});
  rows.push_back({model + ", step time",
                  "gpu:0x2 (256 per place), gradients all-reduced in 4 MB buckets (--fuse-allreduce-mb 4) vs gpu:0, "
                  "global batch 512",
                  bucketed, single, "gpu:0, one place", step_time});

  // The same for the CNN, whose step is device-bound at this size where the MLP's is
  // launch-bound: the two places' kernels can share the GPU's multiprocessors.
  const std::string cnn_shared = "train_cnn/actor/gpu:0x2/batch:128";
  const std::string cnn_single = "train_cnn/actor/gpu:0/batch:128";
  benchmark::RegisterBenchmark(cnn_shared.c_str(), train_cnn_actor, 128, 2)->UseRealTime();
  benchmark::RegisterBenchmark(cnn_single.c_str(), train_cnn_actor, 128, 1)->UseRealTime();
  rows.push_back({cnn_model + ", step time", "gpu:0x2 (64 per place) vs gpu:0, global batch 128", cnn_shared,
                  cnn_single, "gpu:0, one place", step_time});

  // CUDA graphs (--cuda-graphs): one launch per step for the places together, so the two
  // places' launches no longer go through the driver one by one.
  const std::string graph_single = "train_mlp/actor-graphs/gpu:0/batch:512";
  const std::string graph_shared = "train_mlp/actor-graphs/gpu:0x2/batch:512";
  const std::string graph_b256 = "train_mlp/actor-graphs/gpu:0/batch:256";
  benchmark::RegisterBenchmark(graph_single.c_str(), train_mlp_graphs, 512, 1)->UseRealTime();
  benchmark::RegisterBenchmark(graph_shared.c_str(), train_mlp_graphs, 512, 2)->UseRealTime();
  benchmark::RegisterBenchmark(graph_b256.c_str(), train_mlp_graphs, 256, 1)->UseRealTime();
  rows.push_back({model + ", step time", "CUDA graphs: gpu:0x2 (256 per place) vs gpu:0, global batch 512",
                  graph_shared, graph_single, "gpu:0 with CUDA graphs", step_time});
  rows.push_back({model + ", step time", "gpu:0 with CUDA graphs vs without, batch 512", graph_single, single,
                  "gpu:0 without", step_time});
  rows.push_back({model + ", step time", "gpu:0x2 with CUDA graphs vs gpu:0 without, global batch 512", graph_shared,
                  single, "gpu:0 without", step_time});
  rows.push_back({model + ", step time", "actor executor with CUDA graphs, 1 place vs PyTorch eager, batch 256",
                  graph_b256, "train_mlp/torch/cuda/batch:256", torch_label, step_time});
  const std::string cnn_graph_single = "train_cnn/actor-graphs/gpu:0/batch:128";
  const std::string cnn_graph_shared = "train_cnn/actor-graphs/gpu:0x2/batch:128";
  benchmark::RegisterBenchmark(cnn_graph_single.c_str(), train_cnn_graphs, 128, 1)->UseRealTime();
  benchmark::RegisterBenchmark(cnn_graph_shared.c_str(), train_cnn_graphs, 128, 2)->UseRealTime();
  rows.push_back({cnn_model + ", step time", "CUDA graphs: gpu:0x2 (64 per place) vs gpu:0, global batch 128",
                  cnn_graph_shared, cnn_graph_single, "gpu:0 with CUDA graphs", step_time});
  rows.push_back({cnn_model + ", step time", "gpu:0 with CUDA graphs vs without, global batch 128", cnn_graph_single,
                  cnn_single, "gpu:0 without", step_time});

  static const programs chain = scale_chain();
  const bench::metric op_time{"op_time", "ns/op", 1e9};
  const bench::metric gap{"enqueue_gap", "ns/op", 1e9};
  const std::string gpu_step = "chain/actor/gpu:0/step", cpu_step = "chain/actor/cpu:0/step";
  const std::string gpu_gap = "chain/actor/gpu:0/enqueue", cpu_gap = "chain/actor/cpu:0/enqueue";
  benchmark::RegisterBenchmark(gpu_step.c_str(), chain_step, chain, place::gpu(0, 0))
      ->UseRealTime();
  benchmark::RegisterBenchmark(cpu_step.c_str(), chain_step, chain, place::cpu(0))->UseRealTime();
  benchmark::RegisterBenchmark(gpu_gap.c_str(), chain_enqueue, chain, place::gpu(0, 0))
      ->UseRealTime();
  benchmark::RegisterBenchmark(cpu_gap.c_str(), chain_enqueue, chain, place::cpu(0))->UseRealTime();
  const std::string chain_text = std::to_string(chain_ops) + "-op scale chain on a [1] tensor";
  rows.push_back({"executor overhead, step time / ops", chain_text + ", gpu:0 vs cpu:0", gpu_step,
                  cpu_step, "same chain on cpu:0", op_time});
  rows.push_back({"executor overhead, input ready -> kernel enqueued (traced)",
                  chain_text + ", gpu:0 vs cpu:0", gpu_gap, cpu_gap, "same chain on cpu:0", gap});
  bench::run_and_report(rows);
}

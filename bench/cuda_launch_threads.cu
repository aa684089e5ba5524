// How the CUDA runtime, cuBLAS and event calls scale when several host threads issue them
// into one GPU's context, each thread on a stream of its own: the situation of two logical
// places on one GPU (gpu:0x2), whose stream threads launch at once. If a call's host time
// doubles with a second thread, the driver (or the library) serializes the threads and no
// scheduling of ours can make two places launch faster than one; if it does not, the
// contention is in the engine. scripts/gpu_check.sh runs it; it prints one table:
//   call | threads | host us per call (mean over threads) | calls/s, all threads | vs 1 thread
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "cuda_launch_threads: %s: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "cuda_launch_threads: %s: cuBLAS status %d\n", what, static_cast<int>(status));
  std::exit(1);
}

__global__ void scale(float* x, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] *= a;
}

/// One thread's resources: a stream, a cuBLAS handle bound to it, operands.
struct lane {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  float *x = nullptr, *a = nullptr, *b = nullptr, *c = nullptr;
  cudaEvent_t event = nullptr;
};

constexpr int elements = 1 << 16;
constexpr int m = 256, n = 256, k = 784; // the MLP's first layer at 256 rows

lane make_lane() {
  lane l;
  check(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cublasCreate(&l.blas), "cublasCreate");
  check(cublasSetStream(l.blas, l.stream), "cublasSetStream");
  check(cudaMalloc(&l.x, elements * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&l.a, m * k * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&l.b, k * n * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&l.c, m * n * sizeof(float)), "cudaMalloc");
  check(cudaMemset(l.x, 0, elements * sizeof(float)), "cudaMemset");
  check(cudaMemset(l.a, 0, m * k * sizeof(float)), "cudaMemset");
  check(cudaMemset(l.b, 0, k * n * sizeof(float)), "cudaMemset");
  check(cudaEventCreateWithFlags(&l.event, cudaEventDisableTiming), "cudaEventCreate");
  return l;
}

/// The calls measured, each issued `calls` times per thread.
struct call_kind {
  const char* name;
  int calls;
  std::function<void(lane&)> issue;
};

/// Runs `kind` on `threads` lanes at once (after a barrier); returns host seconds per call
/// (inside the calls only), mean over the threads, and calls per second over all threads
/// (wall time, the periodic synchronizations included).
std::pair<double, double> measure(const call_kind& kind, std::vector<lane>& lanes, int threads) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> seconds(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  const auto wall_start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      lane& l = lanes[static_cast<std::size_t>(t)];
      ++ready;
      while (!go.load()) std::this_thread::yield();
      std::chrono::steady_clock::duration issuing{};
      for (int i = 0; i < kind.calls; ++i) {
        const auto start = std::chrono::steady_clock::now();
        kind.issue(l);
        issuing += std::chrono::steady_clock::now() - start;
        // Keep the queue short, as a training step does; the waits are not counted: the
        // device's speed is not what is measured.
        if (i % 64 == 63) check(cudaStreamSynchronize(l.stream), "cudaStreamSynchronize");
      }
      seconds[static_cast<std::size_t>(t)] = std::chrono::duration<double>(issuing).count();
      check(cudaStreamSynchronize(l.stream), "cudaStreamSynchronize");
    });
  while (ready.load() < threads) std::this_thread::yield();
  go = true;
  for (auto& th : pool) th.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  double mean = 0;
  for (double s : seconds) mean += s / kind.calls;
  return {mean / threads, threads * static_cast<double>(kind.calls) / wall};
}

} // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("cuda_launch_threads: no GPU\n");
    return 0;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  constexpr int most_threads = 4;
  std::vector<lane> lanes;
  for (int t = 0; t < most_threads; ++t) lanes.push_back(make_lane());
  const float one = 1.f, zero = 0.f;
  const std::vector<call_kind> kinds = {
      {"kernel launch (scale, 64K floats)", 4000,
       [](lane& l) {
         scale<<<64, 256, 0, l.stream>>>(l.x, elements, 1.0001f);
         check(cudaGetLastError(), "launch");
       }},
      {"cublasSgemm 256x256x784", 1000,
       [&](lane& l) {
         check(cublasSgemm(l.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, l.b, n, l.a, k, &zero, l.c, n),
               "cublasSgemm");
       }},
      {"cudaEventRecord + cudaEventQuery", 4000,
       [](lane& l) {
         check(cudaEventRecord(l.event, l.stream), "cudaEventRecord");
         (void)cudaEventQuery(l.event);
       }},
  };
  // Warm-up: modules, cuBLAS heuristics, first launches.
  for (const call_kind& kind : kinds) measure(kind, lanes, most_threads);
  std::printf("| call | host threads | host us per call | calls/s, all threads | vs 1 thread |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const call_kind& kind : kinds) {
    double one_thread = 0;
    for (int threads : {1, 2, 4}) {
      const auto [per_call, rate] = measure(kind, lanes, threads);
      if (threads == 1) one_thread = rate;
      std::printf("| %s | %d | %.2f | %.0f | %.2fx |\n", kind.name, threads, per_call * 1e6, rate,
                  rate / one_thread);
    }
  }
  return 0;
}

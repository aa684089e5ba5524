// An LD_PRELOAD library that counts and times the CUDA runtime calls a program makes through
// libcudart.so, to see what a training step costs the host (scripts/gpu_check.sh's api-count
// stage runs pe-actor-run under it). Every call named below is passed on to the real runtime
// (dlsym RTLD_NEXT); at exit one line per function that was called goes to stderr:
//   cuda_api_count: NAME calls=N host_us=T
// and, when PE_CUDA_API_COUNT_STEPS=S is set, the calls per step (N / S). Calls made inside
// cuBLAS, cuDNN or NCCL (which carry their own runtime) are not seen.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime_api.h>

namespace {

struct counter {
  const char* name;
  std::atomic<unsigned long long> calls{0};
  std::atomic<unsigned long long> ns{0};
};

enum fn {
  event_record, event_query, event_synchronize, stream_wait_event, stream_query,
  stream_synchronize, launch_kernel, memcpy_async, memset_async, get_last_error, get_device,
  set_device, launch_host_func, malloc_device, free_device, count
};

counter counters[count] = {{"cudaEventRecord"},     {"cudaEventQuery"},      {"cudaEventSynchronize"},
                           {"cudaStreamWaitEvent"}, {"cudaStreamQuery"},     {"cudaStreamSynchronize"},
                           {"cudaLaunchKernel"},    {"cudaMemcpyAsync"},     {"cudaMemsetAsync"},
                           {"cudaGetLastError"},    {"cudaGetDevice"},       {"cudaSetDevice"},
                           {"cudaLaunchHostFunc"},  {"cudaMalloc"},          {"cudaFree"}};

template <class F>
F real(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    std::fprintf(stderr, "cuda_api_count: no %s after this library\n", name);
    std::abort();
  }
  return reinterpret_cast<F>(p);
}

/// Calls the real function, counting and timing the call.
template <class F, class... A>
auto timed(fn which, F f, A... args) {
  const auto start = std::chrono::steady_clock::now();
  auto result = f(args...);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  counters[which].calls.fetch_add(1, std::memory_order_relaxed);
  counters[which].ns.fetch_add(static_cast<unsigned long long>(ns.count()), std::memory_order_relaxed);
  return result;
}

struct report {
  ~report() {
    const char* steps_text = std::getenv("PE_CUDA_API_COUNT_STEPS");
    const double steps = steps_text != nullptr ? std::atof(steps_text) : 0;
    for (const counter& c : counters) {
      const unsigned long long n = c.calls.load();
      if (n == 0) continue;
      std::fprintf(stderr, "cuda_api_count: %-22s calls=%llu host_us=%.0f", c.name, n, c.ns.load() / 1e3);
      if (steps > 0) std::fprintf(stderr, " per_step=%.1f host_us_per_step=%.1f", n / steps, c.ns.load() / 1e3 / steps);
      std::fprintf(stderr, "\n");
    }
  }
} at_exit;

} // namespace

#define PE_FORWARD(FN, INDEX, PARAMS, ARGS)                                \
  extern "C" cudaError_t FN PARAMS {                                       \
    static const auto f = real<cudaError_t(*) PARAMS>(#FN);                \
    return timed(INDEX, f, ARGS);                                          \
  }
#define PE_ARGS(...) __VA_ARGS__

PE_FORWARD(cudaEventRecord, event_record, (cudaEvent_t e, cudaStream_t s), PE_ARGS(e, s))
PE_FORWARD(cudaEventQuery, event_query, (cudaEvent_t e), e)
PE_FORWARD(cudaEventSynchronize, event_synchronize, (cudaEvent_t e), e)
PE_FORWARD(cudaStreamWaitEvent, stream_wait_event, (cudaStream_t s, cudaEvent_t e, unsigned int flags),
           PE_ARGS(s, e, flags))
PE_FORWARD(cudaStreamQuery, stream_query, (cudaStream_t s), s)
PE_FORWARD(cudaStreamSynchronize, stream_synchronize, (cudaStream_t s), s)
PE_FORWARD(cudaLaunchKernel, launch_kernel,
           (const void* k, dim3 g, dim3 b, void** a, size_t shared, cudaStream_t s),
           PE_ARGS(k, g, b, a, shared, s))
PE_FORWARD(cudaMemcpyAsync, memcpy_async,
           (void* d, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s),
           PE_ARGS(d, src, n, kind, s))
PE_FORWARD(cudaMemsetAsync, memset_async, (void* d, int v, size_t n, cudaStream_t s), PE_ARGS(d, v, n, s))
extern "C" cudaError_t cudaGetLastError(void) {
  static const auto f = real<cudaError_t (*)(void)>("cudaGetLastError");
  return timed(get_last_error, f);
}
PE_FORWARD(cudaGetDevice, get_device, (int* d), d)
PE_FORWARD(cudaSetDevice, set_device, (int d), d)
PE_FORWARD(cudaLaunchHostFunc, launch_host_func, (cudaStream_t s, cudaHostFn_t fn, void* data),
           PE_ARGS(s, fn, data))
PE_FORWARD(cudaMalloc, malloc_device, (void** p, size_t n), PE_ARGS(p, n))
PE_FORWARD(cudaFree, free_device, (void* p), p)

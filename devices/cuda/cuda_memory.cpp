#include "devices/cuda/cuda_memory.hpp"

#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/cuda_stream.hpp"
#include "devices/cuda/per_device.hpp"

namespace pe {

namespace {

struct stream_registry {
  std::mutex mutex;
  std::set<cuda_stream_backend*> streams;
};

stream_registry& streams() {
  static stream_registry* r = new stream_registry; // never destroyed: streams may close at exit
  return *r;
}

/// Runs `f` with `device` as the calling thread's current device, then restores it.
template <class F>
auto on_device(int device, F&& f) {
  int previous = -1;
  (void)cudaGetDevice(&previous);
  use_cuda_device(device);
  struct restore {
    int previous, device;
    ~restore() {
      if (previous >= 0 && previous != device) (void)cudaSetDevice(previous);
    }
  } guard{previous, device};
  return f();
}

/// Events recorded on every live stream: done when all are.
class cuda_fence final : public memory_fence {
 public:
  ~cuda_fence() override {
    for (auto& [pool, e] : events_) pool->give_back(e);
  }

  void add(std::shared_ptr<cuda_event_pool> pool, cudaEvent_t e) {
    events_.emplace_back(std::move(pool), e);
  }

  bool done() override {
    while (next_ < events_.size()) {
      const cudaError_t status = cudaEventQuery(events_[next_].second);
      // An error other than "not ready" means the context is broken: its work will never
      // run, and waiting for it would hang.
      if (status == cudaErrorNotReady) return false;
      ++next_;
    }
    return true;
  }

  void wait() override {
    for (; next_ < events_.size(); ++next_) (void)cudaEventSynchronize(events_[next_].second);
  }

 private:
  std::vector<std::pair<std::shared_ptr<cuda_event_pool>, cudaEvent_t>> events_;
  std::size_t next_ = 0; // events before it are done
};

/// The caching allocators of the live places, by (CUDA device, place index).
struct allocator_registry {
  std::mutex mutex;
  std::map<std::pair<int, int>, std::weak_ptr<caching_allocator>> allocators;
};

allocator_registry& allocators() {
  static allocator_registry* r = new allocator_registry; // never destroyed: devices may close at exit
  return *r;
}

/// Gives back what the other places on `device` cache and can spare right now (those whose
/// allocator is busy are skipped: waiting for one could deadlock two places running out of
/// memory at once).
void release_siblings(int device, int except_index) {
  std::vector<std::shared_ptr<caching_allocator>> siblings;
  {
    std::lock_guard<std::mutex> guard(allocators().mutex);
    for (auto& [key, weak] : allocators().allocators)
      if (key.first == device && key.second != except_index)
        if (auto a = weak.lock()) siblings.push_back(std::move(a));
  }
  for (auto& a : siblings) a->try_release_cached();
}

class cuda_backend final : public memory_backend {
 public:
  cuda_backend(int device, int place_index) : device_(device), place_index_(place_index) {}

  void* reserve(std::size_t bytes) override {
    return on_device(device_, [&]() -> void* {
      void* p = nullptr;
      cudaError_t status = cudaMalloc(&p, bytes);
      if (status == cudaErrorMemoryAllocation) {
        // The other places on this GPU may cache what this one needs.
        (void)cudaGetLastError();
        release_siblings(device_, place_index_);
        status = cudaMalloc(&p, bytes);
      }
      if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return nullptr; // the allocator empties its own cache and tries again
      }
      check_cuda(status, "cudaMalloc of " + std::to_string(bytes) + " bytes on CUDA device " +
                             std::to_string(device_));
      return p;
    });
  }

  void unreserve(void* block, std::size_t) override {
    on_device(device_, [&] { return cudaFree(block); }); // errors at exit: the context is gone
  }

  std::unique_ptr<memory_fence> fence() override;

 private:
  int device_;
  int place_index_;
};

std::unique_ptr<memory_fence> cuda_backend::fence() {
  auto f = std::make_unique<cuda_fence>();
  stream_registry& r = streams();
  std::lock_guard<std::mutex> guard(r.mutex); // streams unregister before they are destroyed
  for (cuda_stream_backend* s : r.streams) {
    auto pool = s->event_pool();
    cudaEvent_t e = pool->take();
    const cudaError_t status = cudaEventRecord(e, s->handle());
    if (status != cudaSuccess) {
      pool->give_back(e);
      check_cuda(status, "cudaEventRecord (memory fence) on " + s->describe());
    }
    f->add(std::move(pool), e);
  }
  return f;
}

} // namespace

void track_stream(cuda_stream_backend* s) {
  std::lock_guard<std::mutex> guard(streams().mutex);
  streams().streams.insert(s);
}

void untrack_stream(cuda_stream_backend* s) {
  std::lock_guard<std::mutex> guard(streams().mutex);
  streams().streams.erase(s);
}

std::shared_ptr<caching_allocator> cuda_memory(place where) {
  allocator_registry& r = allocators();
  std::lock_guard<std::mutex> guard(r.mutex);
  std::weak_ptr<caching_allocator>& slot = r.allocators[{where.device, where.index}];
  if (auto existing = slot.lock()) return existing;
  auto fresh = std::make_shared<caching_allocator>(std::make_unique<cuda_backend>(where.device, where.index));
  slot = fresh;
  return fresh;
}

} // namespace pe

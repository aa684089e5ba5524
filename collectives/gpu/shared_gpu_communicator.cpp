#include <cuda_runtime_api.h>

#include "collectives/gpu/gpu_communicators.hpp"
#include "collectives/gpu/rank_sum.hpp"
#include "core/error.hpp"
#include "devices/cuda/cuda_event.hpp"
#include "devices/cuda/cuda_stream.hpp"

namespace pe {

namespace {

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw error(what + " failed: " + cudaGetErrorString(e));
}

/// An event of the communicator's pool (no timing: cheap to record) for one issue, given
/// back when the issue ends: a cudaStreamWaitEvent already made waits for the record it saw,
/// whatever later records of the event (CUDA's documented semantics), so it may be reused at
/// once.
class sync_event {
 public:
  explicit sync_event(cuda_event_pool& pool) : pool_(&pool), handle_(pool.take()) {}
  ~sync_event() { pool_->give_back(handle_); }
  sync_event(const sync_event&) = delete;
  sync_event& operator=(const sync_event&) = delete;
  cudaEvent_t get() const { return handle_; }

 private:
  cuda_event_pool* pool_;
  cudaEvent_t handle_;
};

} // namespace

shared_gpu_communicator::shared_gpu_communicator(const std::vector<device*>& devices)
    : devices_(devices), meeting_(static_cast<int>(devices.size())),
      events_(std::make_shared<cuda_event_pool>(devices.empty() ? 0 : devices.front()->where().device)) {
  if (devices_.size() > static_cast<std::size_t>(max_rank_buffers))
    throw error("GPU collectives: " + std::to_string(devices_.size()) + " places share GPUs; at most " +
                std::to_string(max_rank_buffers) + " can");
  for (device* d : devices_)
    if (d->where().device != devices_.front()->where().device)
      throw error("GPU collectives: " + to_string(d->where()) + " and " + to_string(devices_.front()->where()) +
                  " are on different GPUs while other places share one; give every place a GPU of its own "
                  "(NCCL) or put all of them on one GPU");
}

void shared_gpu_communicator::launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers,
                                     stream& on, completion done) {
  expect_no_all_gather(call, "shared-GPU");
  meeting_.enqueue_part(local_rank, call, std::move(buffers), on, cuda_stream_of(on, call.label).handle(),
                        std::move(done), [this](auto& by_rank) { issue(by_rank); });
}

void shared_gpu_communicator::issue(std::vector<collective_rendezvous::arrival>& by_rank) {
  const collective_call& call = by_rank.front().call;
  const std::size_t ranks = by_rank.size();
  const auto root = static_cast<std::size_t>(call.root);
  check(cudaSetDevice(devices_.front()->where().device), "cudaSetDevice");
  // Allocation before anything is enqueued: a broadcast's other buffers take the root's size.
  if (call.what == collective_call::kind::broadcast)
    for (std::size_t r = 0; r < ranks; ++r)
      if (r != root)
        for (std::size_t v = 0; v < by_rank[r].buffers.size(); ++v)
          by_rank[r].buffers[v]->resize(dtype::fp32, by_rank[root].buffers[v]->shape(), devices_[r]->where(),
                                        devices_[r]->memory());
  // Rank 0's stream runs the sums once every rank's earlier work is done, and every
  // rank's later work waits for the sums. The streams' host threads are all parked in the
  // meeting, so nothing else is enqueued on them meanwhile.
  auto stream_of = [&](std::size_t r) { return static_cast<cudaStream_t>(by_rank[r].stream); };
  for (std::size_t r = 1; r < ranks; ++r) {
    const sync_event ready(*events_);
    check(cudaEventRecord(ready.get(), stream_of(r)), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream_of(0), ready.get(), 0), "cudaStreamWaitEvent");
  }
  for (std::size_t v = 0; v < by_rank.front().buffers.size(); ++v) {
    std::vector<const float*> sources;
    std::vector<float*> destinations;
    for (std::size_t r = 0; r < ranks; ++r) {
      float* data = by_rank[r].buffers[v]->data<float>();
      const bool is_root = r == root;
      switch (call.what) {
      case collective_call::kind::all_reduce: sources.push_back(data); destinations.push_back(data); break;
      case collective_call::kind::reduce:
        sources.push_back(data);
        if (is_root) destinations.push_back(data);
        break;
      case collective_call::kind::broadcast:
        if (is_root) sources.push_back(data);
        else destinations.push_back(data);
        break;
      case collective_call::kind::all_gather: break; // refused by launch
      }
    }
    launch_rank_sum(sources.data(), static_cast<int>(sources.size()), destinations.data(),
                    static_cast<int>(destinations.size()), by_rank[root].buffers[v]->numel(), stream_of(0));
  }
  const sync_event finished(*events_);
  check(cudaEventRecord(finished.get(), stream_of(0)), "cudaEventRecord");
  for (std::size_t r = 1; r < ranks; ++r)
    check(cudaStreamWaitEvent(stream_of(r), finished.get(), 0), "cudaStreamWaitEvent");
}

} // namespace pe

#pragma once

// The GPU places' communicators that need no NCCL, and the choice between them and NCCL's
// (nccl_communicator.hpp, in builds with NCCL).

#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/gpu/collective_rendezvous.hpp"
#include "devices/device.hpp"

namespace pe {

/// The communicator of GPU places when some share one GPU (gpu:0x4): NCCL refuses duplicate
/// devices, so the last rank to arrive sums the ranks' buffers with the engine's own kernel
/// (fixed order rank 0, 1, ...: bit-identical results) on its stream after events on every
/// rank's stream, and every rank's stream waits for it. Every place must be on that one GPU
/// (the kernel reads every rank's buffer): a mix of shared and other GPUs is refused.
class cuda_event_pool;

class shared_gpu_communicator final : public communicator {
 public:
  explicit shared_gpu_communicator(const std::vector<device*>& devices);
  int world_size() const override { return static_cast<int>(devices_.size()); }
  void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers, stream& on,
              completion done = {}) override;
  void abort() override { meeting_.abort("the communicator was aborted (the executor is being destroyed)"); }

 private:
  void issue(std::vector<collective_rendezvous::arrival>& by_rank);

  std::vector<device*> devices_;
  collective_rendezvous meeting_;
  /// The events that order the ranks' streams around each sum, reused: made and destroyed
  /// per collective they cost more host time than the rest of its issue (3 of each for 2
  /// ranks, 6 collectives a step on the MLP).
  std::shared_ptr<cuda_event_pool> events_;
};

class cuda_stream;

/// `on` as a GPU stream; throws pe::error naming `label` and the place when it is not one.
cuda_stream& cuda_stream_of(stream& on, const std::string& label);

/// The communicator for this process's GPU places: NCCL when every place has a GPU of its
/// own, else the shared-GPU communicator. Without NCCL in the build, distinct GPUs are a
/// pe::error saying so.
std::unique_ptr<communicator> make_gpu_communicator(const std::vector<device*>& devices);

} // namespace pe

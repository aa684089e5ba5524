#include "collectives/communicators.hpp"

#include "collectives/cpu/inproc_communicator.hpp"
#include "collectives/net/process_group.hpp"
#include "devices/error.hpp"
#if PE_WITH_NCCL
#include "collectives/gpu/nccl_communicator.hpp"
#include "collectives/gpu/nccl_id.hpp"
#endif

namespace pe {

namespace {

std::unique_ptr<communicator> make_gpu(const std::vector<device*>& devices, process_group* group) {
#if PE_WITH_NCCL
  if (group == nullptr) return make_gpu_communicator(devices);
  const int local = static_cast<int>(devices.size());
  return std::make_unique<nccl_communicator>(devices, share_nccl_id(*group), group->size() * local,
                                             group->rank() * local, [group] { return group->broken(); });
#else
  (void)group;
  throw error("GPU collectives over " + to_string(devices.front()->where()) +
              " need NCCL, which this build lacks (the CUDA toolkit under /usr/local/cuda ships it)");
#endif
}

} // namespace

std::unique_ptr<communicator> make_communicator(const std::vector<device*>& devices, process_group* group) {
  if (devices.empty()) throw error("make_communicator: no places");
  // One place in one process: nothing to exchange, so no NCCL communicator to set up.
  if (devices.size() == 1 && group == nullptr) return std::make_unique<inproc_communicator>(1);
  if (devices.front()->where().type == place::kind::gpu) return make_gpu(devices, group);
  if (group != nullptr) return group->make_communicator(static_cast<int>(devices.size()));
  return std::make_unique<inproc_communicator>(static_cast<int>(devices.size()));
}

} // namespace pe

#include "collectives/communicators.hpp"

#include <map>
#include <mutex>

#include "collectives/cpu/inproc_communicator.hpp"
#include "collectives/net/process_group.hpp"
#include "core/error.hpp"
#if PE_WITH_GPU_COLLECTIVES
#include "collectives/gpu/gpu_communicators.hpp"
#endif
#if PE_WITH_NCCL
#include "collectives/gpu/distinct_gpus.hpp"
#include "collectives/gpu/nccl_communicator.hpp"
#include "collectives/gpu/nccl_id.hpp"
#include "devices/cuda/cuda_inventory.hpp"
#endif

namespace pe {

std::string to_string(collective_call::kind kind) {
  switch (kind) {
    case collective_call::kind::all_reduce: return "all_reduce";
    case collective_call::kind::reduce: return "reduce";
    case collective_call::kind::broadcast: return "broadcast";
    case collective_call::kind::all_gather: return "all_gather";
  }
  return "?";
}

void expect_no_all_gather(const collective_call& call, const std::string& backend) {
  if (call.what == collective_call::kind::all_gather)
    throw error(call.label + ": SELECTED_ROWS (sparse) gradients are gathered by the in-process CPU "
                "backend only; the " + backend + " backend does not run all_gather yet");
}

namespace {

std::unique_ptr<communicator> make_gpu(const std::vector<device*>& devices, process_group* group) {
#if PE_WITH_GPU_COLLECTIVES
  if (group == nullptr) return make_gpu_communicator(devices);
#endif
#if PE_WITH_NCCL
  // One GPU in two ranks of an NCCL communicator may hang it: the processes compare their
  // GPUs first (two processes on one machine both given gpu:0, or gpu:0x2 in a job).
  std::vector<gpu_of_place> mine;
  const std::string machine = this_machine(), host = this_host();
  for (device* d : devices)
    mine.push_back({to_string(d->where()), machine, host, cuda_pci_bus_id(d->where().device)});
  refuse_shared_gpus(*group, mine);
  const int local = static_cast<int>(devices.size());
  return std::make_unique<nccl_communicator>(devices, share_nccl_id(*group), group->size() * local,
                                             group->rank() * local, [group] { return group->broken(); });
#else
  (void)group;
  throw error("GPU collectives over " + to_string(devices.front()->where()) +
              (group != nullptr ? " across processes" : "") +
              " need NCCL, which this build lacks (the CUDA toolkit under /usr/local/cuda ships it)");
#endif
}

std::unique_ptr<communicator> make_cpu(const std::vector<device*>& devices, process_group* group) {
  if (group != nullptr) return group->make_communicator(static_cast<int>(devices.size()));
  return std::make_unique<inproc_communicator>(static_cast<int>(devices.size()));
}

struct communicator_registry {
  std::mutex mutex;
  std::map<place::kind, communicator_factory> factories;
};

communicator_registry& registry() {
  static auto* r = new communicator_registry{{}, {{place::kind::cpu, make_cpu}, {place::kind::gpu, make_gpu}}};
  return *r; // never destroyed: executors may close during exit
}

} // namespace

void register_communicator(place::kind kind, communicator_factory factory) {
  communicator_registry& r = registry();
  std::lock_guard<std::mutex> guard(r.mutex);
  r.factories[kind] = std::move(factory);
}

std::unique_ptr<communicator> make_communicator(const std::vector<device*>& devices, process_group* group) {
  if (devices.empty()) throw error("make_communicator: no places");
  // One place in one process: nothing to exchange, so no NCCL communicator to set up.
  if (devices.size() == 1 && group == nullptr) return std::make_unique<inproc_communicator>(1);
  communicator_factory make;
  {
    communicator_registry& r = registry();
    std::lock_guard<std::mutex> guard(r.mutex);
    if (auto it = r.factories.find(devices.front()->where().type); it != r.factories.end()) make = it->second;
  }
  if (!make) throw error("no collectives for " + to_string(devices.front()->where()) + " in this build");
  return make(devices, group);
}

} // namespace pe

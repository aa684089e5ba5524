#include "collectives/gpu/gpu_communicators.hpp"

#include "core/error.hpp"
#include "devices/cuda/cuda_stream.hpp"
#if PE_WITH_NCCL
#include "collectives/gpu/nccl_communicator.hpp"
#endif

namespace pe {

cuda_stream& cuda_stream_of(stream& on, const std::string& label) {
  auto* s = dynamic_cast<cuda_stream*>(&on);
  if (s == nullptr) throw error(label + ": GPU collectives run on GPU streams, not on " + to_string(on.where()));
  return *s;
}

std::unique_ptr<communicator> make_gpu_communicator(const std::vector<device*>& devices) {
  std::vector<int> ordinals;
  for (device* d : devices) {
    if (d->where().type != place::kind::gpu)
      throw error("GPU collectives: " + to_string(d->where()) + " is not a GPU place (places of one kind only)");
    for (int o : ordinals)
      if (o == d->where().device) return std::make_unique<shared_gpu_communicator>(devices);
    ordinals.push_back(d->where().device);
  }
#if PE_WITH_NCCL
  return std::make_unique<nccl_communicator>(devices);
#else
  throw error("GPU collectives over distinct GPUs (" + to_string(devices.front()->where()) + ", ...) need NCCL, "
              "which this build lacks (the CUDA toolkit under /usr/local/cuda ships it)");
#endif
}

} // namespace pe

#include "devices/device.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "devices/cpu/cpu_device.hpp"
#include "devices/gpu_runtime.hpp"
#if PE_WITH_CUDA
#include "devices/cuda/cuda_device_factory.hpp"
#endif

namespace pe {

namespace {

struct device_registry {
  std::mutex mutex;
  std::map<place::kind, device_factory> factories;
  std::map<place::kind, device_inventory_fn> inventories;
};

device_registry& registry() {
  static device_registry* r = [] {
    auto* made = new device_registry; // never destroyed: devices may close during exit
    // The built-in device kinds, one line each (a new kind: its folder, then one line here).
    made->factories[place::kind::cpu] = [](place p) { return std::make_unique<cpu_device>(p); };
    // gpu:... lists are checked against the CUDA runtime's count (none, with the reason, in
    // a build without CUDA).
    made->inventories[place::kind::gpu] = [] { return as_device_inventory(query_gpus()); };
#if PE_WITH_CUDA
    made->factories[place::kind::gpu] = open_cuda_device;
#endif
    return made;
  }();
  return *r;
}

} // namespace

void register_device(place::kind kind, device_factory factory) {
  device_registry& r = registry();
  std::lock_guard<std::mutex> guard(r.mutex);
  r.factories[kind] = std::move(factory);
}

void register_device_inventory(place::kind kind, device_inventory_fn inventory) {
  device_registry& r = registry();
  std::lock_guard<std::mutex> guard(r.mutex);
  r.inventories[kind] = std::move(inventory);
}

device_inventory device_inventory_of(place::kind kind) {
  device_inventory_fn count;
  {
    device_registry& r = registry();
    std::lock_guard<std::mutex> guard(r.mutex);
    if (auto it = r.inventories.find(kind); it != r.inventories.end()) count = it->second;
  }
  if (count) return count();
  return {0, "this build has no " + kind.name() + " devices", ""};
}

std::unique_ptr<device> open_device(place p) {
  device_registry& r = registry();
  device_factory make;
  {
    std::lock_guard<std::mutex> guard(r.mutex);
    auto it = r.factories.find(p.type);
    if (it != r.factories.end()) make = it->second;
  }
  if (!make) throw error("place " + to_string(p) + " needs a device this build does not have");
  return make(p);
}

bool synchronize_all(const std::vector<device*>& devices) {
  bool ok = true;
  for (device* d : devices)
    for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy})
      ok = d->get_stream(kind).synchronize() && ok;
  return ok;
}

stream::task device::fill_work(stream& on, tensor& dst, std::vector<std::int64_t> shape, float value) {
  auto source = std::make_shared<tensor>(dtype::fp32, shape);
  std::fill_n(source->data<float>(), source->numel(), value);
  return [source, copy = copy_work(on, dst, *source)] { copy(); };
}

} // namespace pe

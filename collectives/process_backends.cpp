// The registry of cross-process collective backends, and the one list of the built-in ones:
// adding a backend is its folder plus one line below.
#include "collectives/net/net_communicator.hpp"
#include "collectives/process_backend.hpp"
#include "collectives/shm/shm_backend.hpp"
#include "core/error.hpp"
#include "core/named_registry.hpp"
#if PE_WITH_GLOO
#include "collectives/gloo/gloo_backend.hpp"
#endif

namespace pe {

namespace {

process_backend caf_backend() {
  return {"caf", "the engine's own, over CAF networking (the default)",
          [](const process_backend_context& c) -> std::unique_ptr<communicator> {
            return std::make_unique<net_communicator>(c.transport, c.channel, c.local_ranks);
          },
          true};
}

named_registry<process_backend>& registry() {
  // Never destroyed: executors may close during exit.
  static auto* r = new named_registry<process_backend>({
      caf_backend(),
      shm_backend(),
#if PE_WITH_GLOO
      gloo_backend(),
#endif
  });
  return *r;
}

} // namespace

void register_process_backend(process_backend backend) {
  registry().add(std::move(backend));
}

std::vector<process_backend> process_backends() {
  return registry().entries();
}

process_backend find_process_backend(const std::string& name) {
  std::string names;
  for (auto& b : process_backends()) {
    if (b.name == name) return b;
    names += (names.empty() ? "" : " or ") + b.name;
  }
  throw error("no collective backend '" + name + "' in this build (it has " + names + ")");
}

} // namespace pe

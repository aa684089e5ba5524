// The registry of cross-process collective backends, and the one list of the built-in ones:
// adding a backend is its folder plus one line below.
#include <mutex>

#include "collectives/net/net_communicator.hpp"
#include "collectives/process_backend.hpp"
#include "core/error.hpp"
#if PE_WITH_GLOO
#include "collectives/gloo/gloo_backend.hpp"
#endif

namespace pe {

namespace {

struct backend_registry {
  std::mutex mutex;
  std::vector<process_backend> backends;
};

process_backend caf_backend() {
  return {"caf", "the engine's own, over CAF networking (the default)",
          [](const process_backend_context& c) -> std::unique_ptr<communicator> {
            return std::make_unique<net_communicator>(c.transport, c.channel, c.local_ranks);
          }};
}

backend_registry& registry() {
  static auto* r = [] {
    auto* made = new backend_registry; // never destroyed: executors may close during exit
    made->backends.push_back(caf_backend());
#if PE_WITH_GLOO
    made->backends.push_back(gloo_backend());
#endif
    return made;
  }();
  return *r;
}

} // namespace

void register_process_backend(process_backend backend) {
  backend_registry& r = registry();
  std::lock_guard<std::mutex> guard(r.mutex);
  for (auto& b : r.backends)
    if (b.name == backend.name) {
      b = std::move(backend);
      return;
    }
  r.backends.push_back(std::move(backend));
}

std::vector<process_backend> process_backends() {
  backend_registry& r = registry();
  std::lock_guard<std::mutex> guard(r.mutex);
  return r.backends;
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

// The registry of cross-process collective backends, and the one list of the built-in ones:
// adding a backend is its folder plus one line below.
#include "collectives/net/net_communicator.hpp"
#include "collectives/net/process_group.hpp"
#include "collectives/process_backend.hpp"
#include "collectives/shm/shm_backend.hpp"
#include "core/error.hpp"
#include "core/named_registry.hpp"
#if PE_WITH_GLOO
#include "collectives/gloo/gloo_backend.hpp"
#endif

namespace pe {

namespace {

std::unique_ptr<communicator> caf_communicator(const process_backend_context& c) {
  return std::make_unique<net_communicator>(c.transport, c.channel, c.local_ranks);
}

process_backend caf_backend() {
  return {"caf", "the engine's own, over CAF networking (its packets on a TCP data link per pair of processes, or CAF's TLS connections with --tls-cert)", caf_communicator, true};
}

/// shm where it can be, caf where it cannot: every process learns in the same exchange
/// whether all of them mapped the segment, so all choose the same.
process_backend auto_backend() {
  return {"auto",
          "shm when every process of the job runs on one host, else caf (the default; which one "
          "was chosen is said on stderr when it is caf)",
          [](const process_backend_context& c) -> std::unique_ptr<communicator> {
            std::string why_not;
            if (auto shm = try_shm_communicator(c, why_not)) return shm;
            if (c.group.rank() == 0)
              c.group.warn("the collectives go over CAF, not shared memory: " + why_not);
            return caf_communicator(c);
          },
          true};
}

named_registry<process_backend>& registry() {
  // Never destroyed: executors may close during exit.
  static auto* r = new named_registry<process_backend>({
      auto_backend(),
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

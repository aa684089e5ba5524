#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"

namespace pe {

class process_group;
class net_transport;

/// What a cross-process backend is given to make the communicator of one executor's places:
/// the job's processes, already met (rendezvous and host exchanges go through `group`;
/// every process makes its communicators in the same order), the transport and a channel
/// of its own on it (what the CAF backend sends its collectives over), and the number of
/// places of this process.
struct process_backend_context {
  process_group& group;
  net_transport& transport;
  std::uint32_t channel;
  int local_ranks;
};

/// A way for the CPU places of several processes to run collectives together, by name:
/// `pe-actor-run --collective-backend NAME` (and the job fingerprint, so every process of a
/// job uses the same one). A backend is a folder of collectives/ plus one line in
/// process_backends.cpp that registers it.
struct process_backend {
  std::string name;  ///< what --collective-backend takes: "auto", "caf", "shm", "gloo"
  std::string about; ///< one line for --help
  std::function<std::unique_ptr<communicator>(const process_backend_context&)> make;
  /// Whether the tensors go only where --tls-cert's encryption covers them: over the CAF
  /// connections (caf) or not off this host at all (shm); not over connections of the
  /// backend's own (gloo).
  bool tls_covers = false;
};

/// The backend every job uses unless told otherwise.
inline constexpr const char* default_process_backend = "auto";

/// Makes `backend` available by its name (replacing one of the same name).
void register_process_backend(process_backend backend);

/// Every backend of this build, in registration order (the built-in ones first).
std::vector<process_backend> process_backends();

/// The backend called `name`. Throws pe::error naming the backends this build has.
process_backend find_process_backend(const std::string& name);

} // namespace pe

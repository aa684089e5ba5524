#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/ranks.hpp"
#include "devices/device.hpp"
#include "devices/host_cpus.hpp"
#include "graph/exec/scope.hpp"

namespace caf {
class actor_system;
class actor_system_config;
} // namespace caf

namespace pe {

class process_group;
struct executor_state;

/// What the executors of one set of places share (an executor and the test-program
/// executor made from it): the ranks, a device and a scope per place, and the CAF actor
/// system whose workers run the op actors. Members are destroyed in reverse order: the
/// actor system first (no actor left to enqueue), then the devices (every stream thread
/// ends), then the scopes their work used.
struct executor_runtime {
  /// Throws pe::error for no places or a place without a device in this build. `group`
  /// (may be null) places this process's places among the job's ranks. `pinning`: always
  /// pins each CPU place's device thread to a core of its own now; when_full waits for
  /// places_on_this_host().
  executor_runtime(std::vector<place> places, int threads, process_group* group,
                   place_pinning pinning = place_pinning::never);
  ~executor_runtime();
  executor_runtime(const executor_runtime&) = delete;
  executor_runtime& operator=(const executor_runtime&) = delete;

  rank_model ranks;
  process_group* group; // null: this process alone
  int num_threads;
  std::vector<std::unique_ptr<scope>> scopes;
  std::vector<std::unique_ptr<device>> devices;
  std::unique_ptr<caf::actor_system_config> config; // the system keeps a reference
  std::unique_ptr<caf::actor_system> system;
  /// The executor whose last step's tail may still run on these places (overlap_steps), or
  /// null: whoever runs another program on them or reads their variables finishes it first.
  executor_state* unfinished = nullptr;

  std::vector<scope*> scope_list() const;
  /// A communicator over the places: in memory, or across the group's processes.
  std::unique_ptr<communicator> make_communicator() const;
  std::vector<device*> device_list() const;

  /// Told by each executor sharing this runtime, once it knows them, how many places the
  /// job has on this host (the communicator says: with shared memory every process's):
  /// place_pinning::when_full pins where they are as many as the cores this process may use.
  void places_on_this_host(std::size_t places);

 private:
  /// Pins each CPU place's device thread to a core of its own (devices/host_cpus.hpp), this
  /// process's places after the cores of the job's processes before it; once.
  void pin();

  place_pinning pinning_;
  std::atomic<bool> pinned_{false};
};

} // namespace pe

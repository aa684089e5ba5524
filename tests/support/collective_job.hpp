#pragma once

// Communicators of several "processes" in one test process, each over its local CPU
// places: launch a collective by global rank, wait for every rank with a bound.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "devices/device.hpp"

namespace pe::testing {

struct collective_job {
  /// `processes` x `local` CPU places; the test adds one communicator per process to comms.
  collective_job(int processes, int local);
  ~collective_job();
  collective_job(const collective_job&) = delete;
  collective_job& operator=(const collective_job&) = delete;

  int world() const { return static_cast<int>(devices.size()); }
  stream& on(int rank);

  /// Global rank `rank`'s part of `c` over `buffers`; `done` as communicator::launch's.
  void launch(const collective_call& c, int rank, std::vector<tensor*> buffers,
              communicator::completion done = {});

  /// Every rank's stream synchronized, or nullopt for every rank when one still runs after
  /// `limit_ms` (the communicators are then aborted and the devices stopped).
  std::vector<std::optional<bool>> sync_all(int limit_ms = 5000);

  std::string error(int rank);

  int local;
  std::vector<std::unique_ptr<communicator>> comms;
  std::vector<std::unique_ptr<device>> devices;
};

} // namespace pe::testing

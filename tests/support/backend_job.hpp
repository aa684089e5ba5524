#pragma once

// A cross-process collective backend's job inside one test process, and the checks every
// such backend must pass (the gloo and shm tests run them; each adds its own).

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/net/process_group.hpp"
#include "tests/support/collective_job.hpp"
#include "tests/support/loopback_transport.hpp"

namespace pe::testing {

/// `processes` x `local` CPU places, one communicator per process made as a job's processes
/// make them (at the same time, through their groups over an in-memory transport): from the
/// backend called `backend`, or from `make` when given.
struct backend_job : collective_job {
  using maker = std::function<std::unique_ptr<communicator>(process_group&, int local)>;
  backend_job(int processes, int local, const std::string& backend, maker make = {});
  ~backend_job();

  loopback_network network;
  std::vector<std::unique_ptr<process_group>> groups;
};

/// The checks, each on a job of its own made by `backend`'s name.
void expect_all_reduce_equals_one_process(const std::string& backend, int processes, int local);
void expect_reduce_and_broadcast_with_every_root(const std::string& backend, int processes, int local);
/// 3 processes, one with 12 floats where the others have 10: every rank fails naming it.
void expect_disagreeing_sizes_fail_everywhere(const std::string& backend);
/// 2 x 2 places, rank 3's stream failed: every rank fails; the next collective runs.
void expect_failed_stream_fails_everywhere_then_recovers(const std::string& backend);

} // namespace pe::testing

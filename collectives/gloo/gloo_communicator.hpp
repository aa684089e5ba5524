#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "collectives/communicator.hpp"
#include "collectives/net/staged_communicator.hpp"

namespace gloo {
class Context;
}

namespace pe {

class process_group;

/// The communicator of CPU places spread over several processes with Gloo moving the data.
///
/// Each collective runs in staged_communicator's three stages; the lead's network stage has two
/// parts. A handshake over `control` (an all_reduce of a few floats on the engine's own
/// CAF communicator, one rank per process) makes every process agree on the collective
/// (kind, root, element count) and spreads a failed stream to every process, waiting for a
/// slow peer as long as the group's heartbeats say it lives. Only then the data goes
/// through Gloo (ring all-reduce, reduce or broadcast over its TCP pairs), on a worker
/// thread of this communicator, while the lead's stream waits for it as polled work: the
/// place's device thread runs its kernels meanwhile. So no process enters Gloo unless every
/// process does, and a Gloo operation that still fails (a peer lost mid-transfer, or
/// silent for longer than `timeout`) fails the collective with the group's reason ("lost
/// process rank 1") when its heartbeats find one.
///
/// Every process gets the same bits (Gloo's ring sums each chunk once and passes the sum
/// on), the same from run to run; the grouping of the fp32 sum differs from one process's.
class gloo_communicator final : public staged_communicator {
 public:
  gloo_communicator(process_group& group, std::shared_ptr<gloo::Context> context,
                    std::unique_ptr<communicator> control, int local_ranks,
                    std::chrono::milliseconds timeout);
  ~gloo_communicator() override;

  void abort() override;

 private:
  struct exchange;

  void launch_exchange(const collective_call& call, std::vector<tensor*> buffers, stream& on) override;
  /// Refuses an all_gather (SELECTED_ROWS gradients): Gloo's exchange moves equal sizes.
  void expect_runs(const collective_call& call) const override { expect_no_all_gather(call, "gloo"); }
  /// The data part on the lead's stream: hands `x` to the worker, then waits for it.
  bool poll(const std::shared_ptr<exchange>& x, bool stream_failed);
  /// The worker thread: runs the queued exchanges through Gloo, in order.
  void work();
  void run(exchange& x);

  process_group& group_;
  std::shared_ptr<gloo::Context> context_;
  std::unique_ptr<communicator> control_;
  std::chrono::milliseconds timeout_;

  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::shared_ptr<exchange>> queue_; // guarded by mutex_
  std::optional<std::string> aborted_;          // guarded by mutex_
  bool stopping_ = false;                       // guarded by mutex_
  std::thread worker_;
};

} // namespace pe

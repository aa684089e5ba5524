#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/gpu/collective_rendezvous.hpp"
#include "devices/device.hpp"

namespace pe {

/// The communicator of GPU places on distinct GPUs: NCCL. The local ranks' parts meet
/// (collective_rendezvous); the last one checks every rank's buffers and issues the
/// per-device calls of the collective inside one ncclGroupStart/End onto the ranks'
/// communication streams, in the sequence order all places share. An error inside a group
/// would hang every rank, so nothing is checked or allocated after the group starts.
///
/// In one process the NCCL communicators come from ncclCommInitAll. Across processes
/// (collectives/communicators.cpp) they come from ncclCommInitRankConfig with rank 0's unique
/// id and are non-blocking; a watchdog aborts them (ncclCommAbort) when the process group
/// reports a lost peer, so no process blocks forever in a collective.
class nccl_communicator final : public communicator {
 public:
  /// Why the processes' job broke (a lost peer), polled by the watchdog; nullopt while fine.
  using health_fn = std::function<std::optional<std::string>()>;

  /// One process: a communicator over `devices` (GPU places on distinct CUDA devices).
  explicit nccl_communicator(const std::vector<device*>& devices);
  /// Several processes: this process's `devices` are global ranks first_rank, first_rank+1,
  /// ... of `world` ranks, joined through `nccl_id` (share_nccl_id).
  nccl_communicator(const std::vector<device*>& devices, const std::vector<char>& nccl_id, int world,
                    int first_rank, health_fn health);
  ~nccl_communicator() override;

  int world_size() const override { return world_; }
  void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers, stream& on,
              completion done = {}) override;
  void abort() override;
  /// Why the communicators were aborted (a lost peer, an NCCL error, the executor going
  /// away), or nullopt: the kernels of an aborted collective end without a CUDA error, so a
  /// step whose collectives were cut short must not pass for done.
  std::optional<std::string> failure() const override;

 private:
  struct comms; // the ncclComm_t of each local rank (keeps nccl.h out of this header)

  /// Creates this process's non-blocking communicators from rank 0's id and waits until
  /// every rank of the job has joined, giving up (pe::error) when `health_` reports the job
  /// broken: a peer lost before it joined would otherwise leave NCCL waiting for ever.
  void join(const std::vector<char>& nccl_id);
  void issue(std::vector<collective_rendezvous::arrival>& by_rank);
  /// Starts the thread that aborts the communicators once `health_` reports the job broken
  /// or NCCL reports an asynchronous error (a failing transport: its operations would never
  /// complete).
  void start_watchdog();
  /// The first asynchronous error NCCL reports on one of the communicators, naming its place.
  std::optional<std::string> async_error();
  /// Finalizes the non-blocking communicators (at most 30 s; see the destructor); aborts
  /// them and returns false when that fails, times out or the job breaks meanwhile.
  bool finalize_or_abort();
  /// Aborts the NCCL communicators once (unblocks kernels waiting for a lost peer).
  void abort_nccl(const std::string& why);
  /// Polls a non-blocking communicator until its pending operation is done, releasing `lock`
  /// (nccl_mutex_) between polls; throws once the communicators are aborted, or when
  /// `health` (if given) reports the job broken.
  void wait_nccl(std::unique_lock<std::mutex>& lock, std::size_t rank, const std::string& what,
                 const health_fn& health = {});

  std::vector<device*> devices_;
  int world_;
  int first_rank_;
  std::unique_ptr<comms> comms_;
  collective_rendezvous meeting_;
  health_fn health_; // across processes: the process group's
  std::mutex nccl_mutex_; // NCCL calls on comms_ against ncclCommAbort, which frees them
  std::atomic<bool> aborted_{false};
  mutable std::mutex reason_mutex_;
  std::optional<std::string> abort_reason_; // the first abort's why
  std::atomic<bool> stopping_{false};
  std::thread watchdog_;
};

} // namespace pe

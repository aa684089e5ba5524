#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "collectives/net/staged_communicator.hpp"
#include "collectives/shm/shm_segment.hpp"

namespace pe {

class process_group;

/// The communicator of CPU places spread over several processes of one host, with the data
/// moving through shared memory (shm_segment) instead of sockets: what NCCL's SHM transport
/// is to its network one. Each collective runs in staged_communicator's three stages; the
/// lead's network stage goes in rounds of at most a slot's floats:
/// 1. each process waits until every process finished reading the round before last (whose
///    slots this round reuses), then posts a record of the collective it runs (sequence,
///    kind, root process, element count, whether its stream failed or a buffer is bad) and
///    its chunk of the lead's buffers (a broadcast: the root's process alone) into its slot;
/// 2. once every process posted, each checks that all records agree, and sums every
///    process's slot in process order into its own buffers (a reduce: the root's process
///    only; a broadcast: the others copy the root's slot).
/// So every process gets the same bits, the same as the "caf" backend's direct exchange
/// (the lead's local sum of each process, added in process order). A failed stream or a
/// disagreement, seen by every process in the same round, fails the collective on every
/// process with an error naming the process; a process lost mid-collective fails it with
/// the group's reason once the heartbeats find it. No copy through a socket, no serializer:
/// a 1 MB all-reduce between 2 processes is one copy in and one summing pass out.
///
/// An all_gather (SELECTED_ROWS gradients, whose sizes differ by process) does not fit equal
/// slots: its network stage goes to `rows`, a communicator with one place per process over
/// the group's CAF transport (net_communicator), which gathers rows or all-reduces tables
/// densely as it chooses; the dense stages around it stay here.
///
/// The stage is polled work on the lead's communication stream: the place's thread runs it
/// between kernels and never blocks in it. A watcher thread of this communicator, while a
/// stage is under way, waits for the other processes' posts (spinning briefly, then asleep on
/// the segment's futex word) and calls notify_progress(), which makes the device thread poll
/// again.
class shm_communicator final : public staged_communicator {
 public:
  /// `rows`: one place per process (world size = the group's size), for the all_gathers.
  shm_communicator(process_group& group, std::shared_ptr<shm_segment> segment, int local_ranks,
                   std::unique_ptr<communicator> rows);
  ~shm_communicator() override;

  void abort() override;
  /// Every process of the job maps the one segment: all its ranks run on this host.
  std::optional<int> ranks_on_this_host() const override { return world_size(); }

 private:
  struct exchange;

  void launch_exchange(const collective_call& call, std::vector<tensor*> buffers, stream& on) override;
  /// x's all_gather's network stage, through rows_ on the same stream.
  void launch_gather(const collective_call& call, std::vector<tensor*> buffers, stream& on);
  std::optional<std::vector<network_wait>> network_waits() const override;

  /// One poll of x's stage: true when finished; throws when it failed.
  bool poll(exchange& x, bool stream_failed);
  /// The first poll in x's turn: what this process posts, and how many rounds it takes.
  void start(exchange& x, bool stream_failed);
  /// Round r's data: this process's chunk into its slot (write) or the round's result into
  /// the lead's buffers (read).
  void write_chunk(const exchange& x, std::uint64_t r) const;
  /// Round r's part of x's floats: [first, first + count) of the buffers taken in order.
  struct chunk {
    std::size_t first, count;
  };
  chunk chunk_of(const exchange& x, std::uint64_t r) const;
  void read_chunk(const exchange& x, std::uint64_t r) const;
  /// Why the round's records do not allow the collective to go on (a failed stream, a bad
  /// buffer, a disagreement), naming the process; nullopt when all agree.
  std::optional<std::string> check_records(const exchange& x, std::uint64_t parity) const;
  /// While waiting for `processes`: throws when the group broke or the communicator was
  /// aborted, and publishes the wait for the stall watch.
  void waiting(const exchange& x, std::vector<int> processes);
  /// x's stage is over: the next exchange's turn.
  void finish(exchange& x, std::uint64_t next_round);
  /// The watcher thread (see the class comment).
  void watch();

  process_group& group_;
  std::shared_ptr<shm_segment> segment_; // shared with the group's shm_exchange
  std::size_t slot_floats_;
  std::unique_ptr<communicator> rows_;
  std::atomic<std::uint64_t> gathers_{0}; // all_gathers launched: rows_'s own sequence
  std::atomic<std::uint64_t> launched_{0};  // exchanges launched so far: their turns
  std::atomic<std::uint64_t> finished_{0};  // exchanges finished, in launch order
  std::atomic<std::uint64_t> pending_{0};   // exchanges launched and not finished
  std::uint64_t round_ = 0;                 // the next round: only the exchange whose turn it is touches it

  mutable std::mutex mutex_;
  std::condition_variable wake_watcher_;
  std::optional<std::string> aborted_;            // guarded by mutex_
  bool stopping_ = false;                         // guarded by mutex_
  std::map<std::uint64_t, network_wait> awaited_; // guarded by mutex_: by call sequence
  std::thread watcher_;
};

} // namespace pe

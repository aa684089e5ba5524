#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"

namespace pe {

/// Where the local ranks' parts of one GPU collective meet before one thread issues all of
/// them (NCCL's group calls, or the engine's own reduction when places share a GPU).
///
/// Each rank's part runs on its communication stream's host thread and blocks in meet()
/// until every rank has arrived with the same call; the last to arrive checks the calls and
/// buffers of all ranks and runs `issue` once, then every rank returns. Waiting holds only
/// that stream's host thread. Plain C++ (no CUDA): the meeting logic is tested on the host.
class collective_rendezvous {
 public:
  /// One rank's part: its call, its buffers (in the same order on every rank) and its
  /// stream's native handle (a cudaStream_t), passed through to `issue`.
  struct arrival {
    collective_call call;
    std::vector<tensor*> buffers;
    void* stream = nullptr;
  };
  /// Issues the collective for every rank, by rank; runs on the last arrival's thread, with
  /// the buffers checked. What it throws fails the collective on every rank.
  using issue_fn = std::function<void(std::vector<arrival>& by_rank)>;

  /// The local ranks of a communicator: `ranks` places of this process, whose global ranks
  /// (what a call's root names) are first_rank, first_rank + 1, ... (0 in one process).
  explicit collective_rendezvous(int ranks, int first_rank = 0);

  int ranks() const { return ranks_; }

  /// Rank `rank`'s part. Returns once the collective was issued for every rank. Throws
  /// pe::error on every rank when any rank arrived with a failed stream (`failed`), with
  /// another sequence, kind or root than the call it expects, or with buffers that disagree
  /// (count, FP32, size; a broadcast's non-root buffers are resized by `issue`), when
  /// `issue` threw, and when abort() was called; from then on every meet fails.
  void meet(int rank, arrival a, bool failed, const issue_fn& issue);

  /// Enqueues rank `rank`'s part on `on` with enqueue_always (a failed stream still takes
  /// part, and fails the collective on every rank): meet() with `native` (`on`'s CUDA
  /// stream) as the arrival's stream, then `done`, if any, with the span from when the part
  /// ran to when the collective was issued (on GPU places its kernels run after that). A
  /// `timed` call is timed on the device instead (stream::enqueue_always_timed on every
  /// rank): `done` waits for every rank's device span and gets the latest start and the
  /// earliest end (see collective_span). Every rank's part of a call is enqueued before
  /// the next call's.
  void enqueue_part(int rank, const collective_call& call, std::vector<tensor*> buffers, stream& on,
                    void* native, communicator::completion done, issue_fn issue);

  /// Fails every waiting and later meet with `why`. Idempotent; the first reason sticks.
  void abort(const std::string& why);

  /// The first problem with the buffers of `by_rank` (global ranks first_rank, ...) for
  /// `call`, or none. A broadcast's root may be another process's rank: then no local
  /// buffer is the root's, and each must already hold the root's size (issue checks that).
  static std::optional<std::string> check(const collective_call& call, const std::vector<arrival>& by_rank,
                                          int first_rank = 0);

 private:
  struct meeting {
    std::vector<arrival> by_rank;
    std::vector<bool> arrived;
    int count = 0;
    int left = 0;
    bool done = false;
    std::optional<std::string> failure;
  };

  /// The ranks' device spans of one timed collective, joined for its completion.
  struct span_join;

  int ranks_;
  int first_rank_;
  std::mutex mutex_;
  std::map<std::uint64_t, std::shared_ptr<span_join>> joins_; // by sequence, until every rank enqueued
  std::condition_variable changed_;
  std::map<std::uint64_t, meeting> meetings_;
  std::vector<std::uint64_t> next_; // by rank: the sequence it must come with next
  std::optional<std::string> broken_;
};

} // namespace pe

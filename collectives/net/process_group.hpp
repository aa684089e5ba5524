#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/net/net_transport.hpp"
#include "collectives/process_backend.hpp"
#include "core/tensor.hpp"
#include "crypto/tls_files.hpp"

namespace pe {

/// Everything this process knows of the job's processes before they meet.
struct process_group_options {
  int rank = 0; ///< this process's rank
  int size = 1; ///< processes in the job
  std::string master_host = "127.0.0.1";
  int master_port = 0; ///< where rank 0 listens
  /// A peer silent (no data, no heartbeat) for this long is declared lost.
  std::chrono::milliseconds peer_timeout{10000};
  /// How long the processes wait for each other at the start (the master may start last).
  std::chrono::milliseconds join_timeout{60000};
  /// What must be equal on every process for the job to compute one thing (program hash,
  /// build, places, the flags that change the math): (name, value) pairs in one order.
  std::vector<std::pair<std::string, std::string>> fingerprint;
  /// Which backend runs the CPU places' collectives across the processes, by its name in
  /// collectives/process_backend.hpp ("auto", "caf", "shm", "gloo"). The same on every
  /// process: put it in the fingerprint.
  std::string collective_backend = default_process_backend;
  /// The job's secret: every process must prove it holds the same one to join (see
  /// job_admission); it never crosses the wire. Empty: an open job, which anyone who can
  /// reach the master and knows the program may join.
  std::string job_token;
  /// When given (all three), every connection between the processes is mutual TLS through
  /// CAF's OpenSSL module, each side checked against the CA; otherwise plain TCP.
  tls_files tls;
  /// Whether the packets between two processes (collectives, host exchanges) travel over a
  /// TCP connection of their own (socket_link, opened through CAF while joining) instead of
  /// as CAF messages: the bytes skip CAF's serializer, broker buffers and actors. Never with
  /// TLS (the links are plain TCP; CAF's OpenSSL connections carry everything then).
  bool data_links = true;
  /// Where what the job goes on despite is said: a stranger refused at the door, an open
  /// job across machines. Default: a line on stderr.
  std::function<void(const std::string&)> on_warning;
};

/// Says `text` through `on_warning`, or as a "pe-actor: warning:" line on stderr without one:
/// where process_group_options::on_warning's warnings go, before and after the group forms.
void say_warning(const std::function<void(const std::string&)>& on_warning, const std::string& text);

/// A faster way than CAF's messages for the processes of a group to swap bytes (the shm
/// backend's shared memory, on one host): what process_group::all_gather tries first once
/// one is set.
class host_exchange_path {
 public:
  virtual ~host_exchange_path() = default;
  /// Every process's `mine`, by rank, or nullopt on every process when some process's part
  /// does not fit (they then all take the CAF path for this exchange). Waits as
  /// process_group::all_gather does: `waiting(rank, waited)` every `every` while process
  /// `rank` is missing (when given), at most `timeout`; throws pe::error naming the process
  /// when the group broke or the timeout passed.
  virtual std::optional<std::vector<byte_buffer>> all_gather(
      const byte_buffer& mine, const std::function<void(int, std::chrono::milliseconds)>& waiting,
      std::chrono::milliseconds every, std::chrono::milliseconds timeout) = 0;
};

/// The processes of one data-parallel job, connected: the communicators that run the
/// training's collectives across them, and blocking host exchanges (parameters from rank
/// 0, fetched values for the global merge, barriers). Every process must make the same
/// calls in the same order: communicators are matched by creation order, exchanges by
/// their sequence.
class process_group {
 public:
  /// Meets the other processes (join_processes()) or wraps `transport` (tests connect
  /// transports in memory). `clock_offset_ns`: this process's steady clock minus rank 0's.
  /// `options`: what it was formed with (rank and size are the transport's).
  process_group(std::unique_ptr<net_transport> transport, std::int64_t clock_offset_ns = 0,
                std::chrono::milliseconds exchange_timeout = std::chrono::minutes(5),
                process_group_options options = {});
  ~process_group();
  process_group(const process_group&) = delete;
  process_group& operator=(const process_group&) = delete;

  int rank() const;
  int size() const;
  std::int64_t clock_offset_ns() const { return clock_offset_ns_; }
  /// How many peers this process reaches over a data link (process_group_options::data_links).
  int data_links() const { return transport_->data_links(); }
  /// What the group was formed with: the master's address, the peer timeout, the backend.
  const process_group_options& options() const { return options_; }

  /// A communicator over `local_ranks` places per process, from the backend the options
  /// name (find_process_backend); each gets a channel of its own.
  std::unique_ptr<communicator> make_communicator(int local_ranks);
  /// The same from `backend` itself (a test's variant of a registered one).
  std::unique_ptr<communicator> make_communicator(int local_ranks, const process_backend& backend);

  /// Every process's `mine`, by rank. Throws pe::error naming the process that failed, was
  /// lost or sent nothing within the exchange timeout.
  std::vector<byte_buffer> all_gather(const byte_buffer& mine);

  /// The same, calling `waiting(rank, waited)` each time it has waited another `every` for
  /// process `rank`'s part (a stall watch's report); the exchange timeout still ends the
  /// wait. `waiting` may throw to end it sooner.
  std::vector<byte_buffer> all_gather(const byte_buffer& mine,
                                      const std::function<void(int, std::chrono::milliseconds)>& waiting,
                                      std::chrono::milliseconds every);

  /// Rank `root`'s `bytes` on every process.
  byte_buffer broadcast(const byte_buffer& bytes, int root);

  /// Tensors on rank `root` copied to every process (encode_tensors on the wire).
  std::vector<tensor> broadcast_tensors(const std::vector<const tensor*>& tensors, int root);

  /// Returns once every process called it.
  void barrier() { all_gather({}); }

  /// Makes all_gather try `path` first from now on (nullptr: CAF's messages alone). Every
  /// process must set it at the same point of its exchanges (a backend does, while every
  /// process makes its communicator); the path must outlive its use here or be replaced.
  void use_exchange_path(std::shared_ptr<host_exchange_path> path) { exchange_path_ = std::move(path); }

  /// A note from this process to rank 0 outside the ordered exchanges (a stall report,
  /// made whenever a step of this process stalls): sent at once, never waited for; cut to
  /// 64 KiB. Rank 0 reads them with take_notes.
  void send_note_to_rank0(const std::string& text);

  /// Rank 0: every note each other process sent since the last call, waiting up to `wait`
  /// for a note from every process that has sent none yet this time. By rank (rank 0's own
  /// entry empty): the notes that arrived, oldest first; none from a process that sent
  /// nothing in time. Throws pe::error when the job broke (a process was lost or lied).
  std::vector<std::vector<std::string>> take_notes(std::chrono::milliseconds wait);
  /// Says `text` where the options say warnings go (on_warning; a line on stderr by
  /// default): what the job goes on despite.
  void warn(const std::string& text) const;

  /// Why the job broke (a process was lost, failed or lied), or nullopt while it is whole:
  /// what GPU collectives poll to abort NCCL instead of waiting for a lost peer forever.
  std::optional<std::string> broken() const;

 private:
  std::unique_ptr<net_transport> transport_;
  std::int64_t clock_offset_ns_;
  std::chrono::milliseconds exchange_timeout_;
  process_group_options options_;
  std::uint32_t channels_ = 0;        // communicators made so far
  std::uint64_t exchanges_ = 0;       // host exchanges so far
  std::uint64_t notes_sent_ = 0;      // notes this process sent to rank 0
  std::vector<std::uint64_t> notes_taken_; // rank 0: notes taken so far, by rank
  std::shared_ptr<host_exchange_path> exchange_path_;
};

/// Connects this process to the job's others through CAF networking: rank 0 listens on
/// master_port; the others connect with retry and back-off for join_timeout and present
/// their fingerprint, which rank 0 compares with its own (a mismatch refuses the process
/// with an error naming the first difference, on both sides). Heartbeats are on: a peer
/// that dies, freezes or loses its connection breaks the group within peer_timeout.
/// Throws pe::error when the job cannot be formed.
std::unique_ptr<process_group> join_processes(const process_group_options& options);

} // namespace pe

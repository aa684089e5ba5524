#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pe {

class process_group;
struct shm_joined;

/// The shared memory that the processes of one job on one host exchange collectives
/// through (the "shm" backend, shm_communicator): made by process rank 0, opened by the
/// others under a random name that rank 0 removes as soon as every process has it mapped (or
/// failed to), so nothing is left in /dev/shm whatever happens to the job afterwards, and no
/// process outside the job can open it later.
///
/// Layout: a header (who made it, how many processes, the slot size, the generation word
/// every waiter sleeps on), one control block per process (its round counters and what it
/// posted for the last two rounds) and two data slots per process (rounds alternate between
/// them, so a process may write round r + 1 while slower ones still read round r), then two
/// host-exchange slots per process (shm_exchange), likewise.
class shm_segment {
 public:
  /// What a process posts with each round: the collective it thinks it runs, so that every
  /// process can check that all run the same one.
  struct record {
    std::uint64_t sequence = 0;
    std::uint64_t kind = 0;
    std::uint64_t root = 0;     ///< the root's process rank
    std::uint64_t elements = 0; ///< floats in the whole collective
    std::uint64_t flags = 0;    ///< failed_stream, bad_buffer
  };
  static constexpr std::uint64_t failed_stream = 1, bad_buffer = 2;

  /// One process's control block (a cache line of its own for the counters).
  struct alignas(64) control {
    std::atomic<std::uint64_t> posted{0}; ///< rounds whose record and data this process wrote
    std::atomic<std::uint64_t> done{0};   ///< rounds this process finished reading
    record records[2];                    ///< by round parity
    /// The host exchanges' own rounds (shm_exchange), apart from the collectives': the host
    /// thread swaps fetches while the places' threads may run collectives.
    alignas(64) std::atomic<std::uint64_t> exchanges_posted{0};
    std::atomic<std::uint64_t> exchanges_done{0};
  };

  /// Bytes of one host-exchange slot (a length word, then the bytes): larger payloads go
  /// through the group's CAF messages.
  static constexpr std::size_t exchange_slot_bytes = std::size_t{256} << 10;

  /// Rank 0 makes the segment, the others open it, through `group`'s exchanges (every
  /// process calls this at the same point). A process that cannot map it (most often: it runs
  /// on another host, where the name does not exist) is an answer rather than an error: every
  /// process learns it in the same exchange, named with its reason, so all can choose another
  /// way together ("auto") or fail alike ("shm"). Throws only when the group's exchanges fail.
  static shm_joined try_join(process_group& group, std::size_t slot_bytes);

  shm_segment(shm_segment&& other) noexcept;
  shm_segment& operator=(shm_segment&&) = delete;
  ~shm_segment();

  int processes() const { return processes_; }
  std::size_t slot_bytes() const { return slot_bytes_; }
  control& of(int process) const;
  /// The processes whose counter `which` (posted, done, exchanges_posted, exchanges_done)
  /// is below `at`, ascending: empty when every process reached it.
  std::vector<int> behind(std::atomic<std::uint64_t> control::*which, std::uint64_t at) const;
  /// Process `process`'s data slot for rounds of `parity`.
  float* slot(int process, std::uint64_t parity) const;
  /// Process `process`'s host-exchange slot for exchange rounds of `parity`.
  char* exchange_slot(int process, std::uint64_t parity) const;

  /// Tells every process that something was posted (wakes those asleep in wait()).
  void signal();
  /// The generation word's value now: what wait() compares against.
  std::uint32_t generation() const;
  /// Sleeps until some process signals after `seen` was read, or `limit` passes.
  void wait(std::uint32_t seen, std::chrono::microseconds limit);

 private:
  struct header;
  shm_segment(void* base, std::size_t bytes, int processes, std::size_t slot_bytes);
  header& head() const;
  /// Rank 0's part of try_join: a new segment of `bytes` under a random name, its header
  /// written. Returns the mapping; `name` is set once the name exists (the caller removes
  /// it). Throws pe::error saying why it could not.
  static void* create(std::size_t bytes, int processes, std::size_t slot_bytes, std::string& name,
                      std::array<unsigned char, 16>& nonce);

  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  int processes_ = 0;
  std::size_t slot_bytes_ = 0;
};

/// What shm_segment::try_join found, the same on every process: the segment, or why the first
/// process (by rank) that could not map it could not.
struct shm_joined {
  std::optional<shm_segment> segment;
  std::string failure; ///< "process rank P: why" when there is no segment
};

} // namespace pe

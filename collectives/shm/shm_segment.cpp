#include "collectives/shm/shm_segment.hpp"

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <random>
#include <vector>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collectives/net/process_group.hpp"
#include "core/error.hpp"

namespace pe {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free,
              "the counters in shared memory must be lock-free to work across processes");

struct shm_segment::header {
  static constexpr std::uint64_t expected_magic = 0x3176686d732d6570; // "pe-shmv1"
  std::uint64_t magic = 0;
  std::array<unsigned char, 16> nonce{};
  std::uint32_t processes = 0;
  std::uint64_t slot_bytes = 0;
  alignas(64) std::atomic<std::uint32_t> generation{0};
  std::atomic<std::uint32_t> sleepers{0};
};

namespace {

constexpr std::size_t page = 4096;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

/// Where the control blocks start: after the header, which static_asserts below keep in 128 bytes.
constexpr std::size_t controls_offset() { return 128; }

std::size_t slots_offset(int processes) {
  return round_up(controls_offset() + sizeof(shm_segment::control) * static_cast<std::size_t>(processes), page);
}

std::size_t exchange_slots_offset(int processes, std::size_t slot_bytes) {
  return slots_offset(processes) + 2 * static_cast<std::size_t>(processes) * slot_bytes;
}

std::size_t segment_bytes(int processes, std::size_t slot_bytes) {
  return exchange_slots_offset(processes, slot_bytes) +
         2 * static_cast<std::size_t>(processes) * shm_segment::exchange_slot_bytes;
}

std::string errno_text() { return std::strerror(errno); }

/// The fd's pages mapped shared; throws pe::error with `what` and errno's reason.
void* map(int fd, std::size_t bytes, const std::string& what) {
  void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) throw error(what + ": mmap of " + std::to_string(bytes) + " bytes failed: " + errno_text());
  return at;
}

/// Removes the segment's name when it goes out of scope: rank 0 keeps its name only while
/// the others open it.
struct unlink_at_exit {
  std::string name;
  ~unlink_at_exit() {
    if (!name.empty()) ::shm_unlink(name.c_str());
  }
};

} // namespace

shm_segment::shm_segment(void* base, std::size_t bytes, int processes, std::size_t slot_bytes)
    : base_(base), bytes_(bytes), processes_(processes), slot_bytes_(slot_bytes) {
  static_assert(sizeof(header) <= controls_offset(), "the header must fit before the control blocks");
}

shm_segment::shm_segment(shm_segment&& other) noexcept
    : base_(other.base_), bytes_(other.bytes_), processes_(other.processes_), slot_bytes_(other.slot_bytes_) {
  other.base_ = nullptr;
}

shm_segment::~shm_segment() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

shm_segment::header& shm_segment::head() const { return *static_cast<header*>(base_); }

shm_segment::control& shm_segment::of(int process) const {
  return *reinterpret_cast<control*>(static_cast<char*>(base_) + controls_offset() +
                                     sizeof(control) * static_cast<std::size_t>(process));
}

std::vector<int> shm_segment::behind(std::atomic<std::uint64_t> control::*which, std::uint64_t at) const {
  std::vector<int> late;
  for (int p = 0; p < processes_; ++p)
    if ((of(p).*which).load(std::memory_order_acquire) < at) late.push_back(p);
  return late;
}

float* shm_segment::slot(int process, std::uint64_t parity) const {
  const std::size_t index = 2 * static_cast<std::size_t>(process) + static_cast<std::size_t>(parity);
  return reinterpret_cast<float*>(static_cast<char*>(base_) + slots_offset(processes_) + index * slot_bytes_);
}

char* shm_segment::exchange_slot(int process, std::uint64_t parity) const {
  const std::size_t index = 2 * static_cast<std::size_t>(process) + static_cast<std::size_t>(parity);
  return static_cast<char*>(base_) + exchange_slots_offset(processes_, slot_bytes_) + index * exchange_slot_bytes;
}

void shm_segment::signal() {
  header& h = head();
  h.generation.fetch_add(1);
  // seq_cst with wait(), which counts itself a sleeper before it reads the generation again
  // in the kernel: either it sees this increment, or this sees it asleep.
  if (h.sleepers.load() > 0)
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&h.generation), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

std::uint32_t shm_segment::generation() const { return head().generation.load(); }

void shm_segment::wait(std::uint32_t seen, std::chrono::microseconds limit) {
  header& h = head();
  h.sleepers.fetch_add(1);
  const auto us = limit.count();
  timespec timeout{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  // Not FUTEX_PRIVATE: the word is shared with other processes. Returns at once when the
  // generation moved on already; EINTR and timeouts are the caller's to look at again.
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&h.generation), FUTEX_WAIT, seen, &timeout, nullptr, 0);
  h.sleepers.fetch_sub(1);
}

shm_joined shm_segment::try_join(process_group& group, std::size_t slot_bytes) {
  const int processes = group.size(), me = group.rank();
  const std::size_t bytes = segment_bytes(processes, slot_bytes);
  unlink_at_exit made;
  // Rank 0's part of the first exchange: [16-byte nonce][the segment's name], or nothing
  // when it could not make one (its reason goes in the second exchange).
  byte_buffer offer;
  std::string failure;
  shm_segment segment(nullptr, bytes, processes, slot_bytes); // unmaps on the way out
  if (me == 0) {
    std::string name;
    std::array<unsigned char, 16> nonce{};
    try {
      segment.base_ = create(bytes, processes, slot_bytes, name, nonce);
      offer.insert(offer.end(), nonce.begin(), nonce.end());
      offer.insert(offer.end(), name.begin(), name.end());
    } catch (const std::exception& e) {
      failure = e.what();
    }
    made.name = name;
  }
  const std::vector<byte_buffer> offers = group.all_gather(offer);
  if (me != 0) {
    const byte_buffer& theirs = offers.at(0);
    if (theirs.size() <= 16) {
      failure = "rank 0 sent no segment name (" + std::to_string(theirs.size()) + " bytes)";
    } else {
      const std::string name(theirs.begin() + 16, theirs.end());
      const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
      struct stat st {};
      if (fd < 0) {
        failure = "cannot open the shared memory segment " + name + " that process rank 0 made: " + errno_text() +
                  " (the shm backend needs every process of the job on one host)";
      } else if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes) {
        failure = "the shared memory segment " + name + " has " + std::to_string(st.st_size) + " bytes, not " +
                  std::to_string(bytes);
        ::close(fd);
      } else {
        try {
          segment.base_ = map(fd, bytes, name);
          const header& h = segment.head();
          if (h.magic != header::expected_magic || std::memcmp(h.nonce.data(), theirs.data(), 16) != 0 ||
              h.processes != static_cast<std::uint32_t>(processes) || h.slot_bytes != slot_bytes)
            failure = "the shared memory segment " + name + " is not the one process rank 0 made for this job";
        } catch (const std::exception& e) {
          failure = e.what();
        }
        ::close(fd);
      }
    }
  }
  // Everyone has it mapped or gave up: rank 0 removes the name after this exchange.
  const std::vector<byte_buffer> outcomes = group.all_gather(byte_buffer(failure.begin(), failure.end()));
  for (int p = 0; p < processes; ++p) {
    const byte_buffer& o = outcomes.at(static_cast<std::size_t>(p));
    if (!o.empty()) return {std::nullopt, "process rank " + std::to_string(p) + ": " + std::string(o.begin(), o.end())};
  }
  return {std::move(segment), {}};
}

void* shm_segment::create(std::size_t bytes, int processes, std::size_t slot_bytes, std::string& name,
                          std::array<unsigned char, 16>& nonce) {
  std::random_device random;
  for (auto& b : nonce) b = static_cast<unsigned char>(random());
  static const char hex[] = "0123456789abcdef";
  std::string chosen = "/pe-actor-shm-" + std::to_string(::getpid()) + "-";
  for (unsigned char b : nonce) {
    chosen += hex[b >> 4];
    chosen += hex[b & 15];
  }
  const int fd = ::shm_open(chosen.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw error("cannot create the shared memory segment " + chosen + ": " + errno_text());
  name = chosen; // ours from here on: the caller removes the name
  // Allocated now, not merely sized: a /dev/shm too small for the segment (a container's
  // 64 MiB, say) is this error here rather than a SIGBUS in the middle of a collective.
  const int allocated = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (allocated != 0) {
    ::close(fd);
    throw error("cannot allocate " + std::to_string(bytes) + " bytes of shared memory for " + name + ": " +
                std::strerror(allocated) + " (is /dev/shm large enough?)");
  }
  void* base = nullptr;
  try {
    base = map(fd, bytes, name);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  auto* h = new (base) header;
  h->nonce = nonce;
  h->processes = static_cast<std::uint32_t>(processes);
  h->slot_bytes = slot_bytes;
  for (int p = 0; p < processes; ++p)
    new (static_cast<char*>(base) + controls_offset() + sizeof(control) * static_cast<std::size_t>(p)) control;
  h->magic = header::expected_magic;
  return base;
}

} // namespace pe

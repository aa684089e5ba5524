#include "collectives/shm/shm_exchange.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/spin_wait.hpp"

namespace pe {

namespace {

/// The length word of a part that did not fit: every process then takes the CAF path.
constexpr std::uint64_t too_big = std::numeric_limits<std::uint64_t>::max();
constexpr std::size_t capacity = shm_segment::exchange_slot_bytes - sizeof(std::uint64_t);

} // namespace

shm_exchange::shm_exchange(process_group& group, std::shared_ptr<shm_segment> segment)
    : group_(group), segment_(std::move(segment)) {}

void shm_exchange::wait_for(std::atomic<std::uint64_t> shm_segment::control::*which, std::uint64_t at,
                            const std::function<void(int, std::chrono::milliseconds)>& waiting,
                            std::chrono::milliseconds every, std::chrono::milliseconds timeout) {
  using namespace std::chrono;
  auto ready = [&] { return segment_->behind(which, at).empty(); };
  const auto start = steady_clock::now();
  auto told = start;
  for (;;) {
    const std::uint32_t seen = segment_->generation();
    // The other processes usually come within microseconds: look before sleeping.
    if (spin_until(microseconds(50), ready)) return;
    const std::vector<int> behind = segment_->behind(which, at);
    if (behind.empty()) return;
    const int late = behind.front();
    if (auto broken = group_.broken()) throw error(*broken);
    const auto now = steady_clock::now();
    const auto waited = duration_cast<milliseconds>(now - start);
    if (waited >= timeout)
      throw error("process rank " + std::to_string(late) + " sent nothing within the exchange timeout of " +
                  std::to_string(timeout.count()) + " ms");
    if (waiting && now - told >= every) {
      told = now;
      waiting(late, waited);
    }
    segment_->wait(seen, milliseconds(2));
  }
}

std::optional<std::vector<byte_buffer>> shm_exchange::all_gather(
    const byte_buffer& mine, const std::function<void(int, std::chrono::milliseconds)>& waiting,
    std::chrono::milliseconds every, std::chrono::milliseconds timeout) {
  const std::uint64_t r = round_++, parity = r & 1;
  const int me = group_.rank(), processes = segment_->processes();
  // Round r reuses round r - 2's slots: everyone must have read those.
  if (r >= 2) wait_for(&shm_segment::control::exchanges_done, r - 1, waiting, every, timeout);
  char* slot = segment_->exchange_slot(me, parity);
  const std::uint64_t length = mine.size() <= capacity ? mine.size() : too_big;
  std::memcpy(slot, &length, sizeof length);
  if (length != too_big) std::memcpy(slot + sizeof length, mine.data(), mine.size());
  shm_segment::control& own = segment_->of(me);
  own.exchanges_posted.store(r + 1, std::memory_order_release);
  segment_->signal();
  wait_for(&shm_segment::control::exchanges_posted, r + 1, waiting, every, timeout);
  std::optional<std::vector<byte_buffer>> all(std::in_place, static_cast<std::size_t>(processes));
  std::optional<std::string> lie;
  for (int p = 0; p < processes && all; ++p) {
    const char* theirs = segment_->exchange_slot(p, parity);
    std::uint64_t n = 0;
    std::memcpy(&n, theirs, sizeof n);
    if (n == too_big) all.reset();
    else if (n > capacity) lie = "process rank " + std::to_string(p) + " posted " + std::to_string(n) +
                                 " bytes in a host-exchange slot of " + std::to_string(capacity);
    else (*all)[static_cast<std::size_t>(p)].assign(theirs + sizeof n, theirs + sizeof n + n);
    if (lie) break;
  }
  own.exchanges_done.store(r + 1, std::memory_order_release);
  segment_->signal();
  if (lie) throw error(*lie);
  return all;
}

} // namespace pe

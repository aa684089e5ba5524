#include "collectives/shm/shm_communicator.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/net/process_group.hpp"
#include "collectives/rank_order_sum.hpp"
#include "core/error.hpp"
#include "core/spin_wait.hpp"
#include "core/steady_clock.hpp"
#include "devices/progress.hpp"

namespace pe {

namespace {

/// Calls `f(values, offset, n)` for each piece of the flat range [begin, begin + n) of the
/// buffers' floats taken one after another: `values` points into the tensor, `offset` is
/// the piece's place in the range.
template <class F>
void for_each_piece(const std::vector<tensor*>& buffers, std::size_t begin, std::size_t n, F&& f) {
  std::size_t at = 0;
  for (tensor* t : buffers) {
    const std::size_t count = t->bytes() / sizeof(float);
    const std::size_t lo = std::max(at, begin), hi = std::min(at + count, begin + n);
    if (lo < hi) f(static_cast<float*>(t->raw()) + (lo - at), lo - begin, hi - lo);
    at += count;
  }
}

} // namespace

/// The network stage of one collective on this process's lead place.
struct shm_communicator::exchange {
  collective_call call;
  std::vector<tensor*> buffers; // the lead's
  std::uint64_t turn = 0;       // its place in launch order
  bool started = false;
  shm_segment::record mine;
  std::uint64_t first_round = 0, rounds = 0, index = 0; // rounds of this collective, the current one
  bool posted = false;                                  // this round's record and chunk are in the slot
};

shm_communicator::shm_communicator(process_group& group, std::shared_ptr<shm_segment> segment, int local_ranks,
                                   std::unique_ptr<communicator> rows)
    : staged_communicator(group.rank(), group.size(), local_ranks), group_(group), segment_(std::move(segment)),
      slot_floats_(segment_->slot_bytes() / sizeof(float)), rows_(std::move(rows)), watcher_([this] { watch(); }) {
  if (rows_->world_size() != group.size())
    throw error("shm: the all_gather communicator has " + std::to_string(rows_->world_size()) +
                " ranks, not one per process (" + std::to_string(group.size()) + ")");
}

shm_communicator::~shm_communicator() {
  abort();
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_watcher_.notify_all();
  watcher_.join(); // it sleeps 2 ms at the most
}

void shm_communicator::abort() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!aborted_) aborted_ = "the communicator was aborted (the executor is being destroyed)";
  }
  abort_local_stages();
  rows_->abort();
  notify_progress();
}

void shm_communicator::launch_exchange(const collective_call& call, std::vector<tensor*> buffers, stream& on) {
  // The slots are host memory, read and written by the place's own thread.
  if (on.where().type != place::kind::cpu)
    throw error(call.label + ": the shm communicator runs on CPU places, not on " + to_string(on.where()));
  if (call.what == collective_call::kind::all_gather) return launch_gather(call, std::move(buffers), on);
  auto x = std::make_shared<exchange>();
  x->call = call;
  x->buffers = std::move(buffers);
  x->turn = launched_.fetch_add(1);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    pending_.fetch_add(1);
  }
  wake_watcher_.notify_one();
  on.enqueue_polled([this, x](bool failed) { return poll(*x, failed); });
}

void shm_communicator::launch_gather(const collective_call& call, std::vector<tensor*> buffers, stream& on) {
  // rows_ numbers its own collectives (its local stage expects 0, 1, 2, ...); the lead
  // launches every all_gather, in the same order on every process.
  collective_call gather = call;
  gather.sequence = gathers_.fetch_add(1);
  gather.root = call.root / local_ranks();
  gather.inputs_ready = nullptr; // stage 1 here already joined the local places
  const std::uint64_t sequence = call.sequence;
  rows_->launch(gather, 0, std::move(buffers), on, [this, sequence](const collective_span& span, bool) {
    if (span.dense_fallback) note_dense_fallback(sequence);
  });
}

void shm_communicator::start(exchange& x, bool stream_failed) {
  x.started = true;
  x.first_round = round_;
  x.mine.sequence = x.call.sequence;
  x.mine.kind = static_cast<std::uint64_t>(x.call.what);
  x.mine.root = static_cast<std::uint64_t>(x.call.root / local_ranks());
  if (stream_failed) {
    x.mine.flags = shm_segment::failed_stream;
  } else {
    // Read now, not at launch: earlier work on the stream may have resized the buffers.
    for (const tensor* t : x.buffers) {
      if (!t->initialized() || t->type() != dtype::fp32) x.mine.flags |= shm_segment::bad_buffer;
      else x.mine.elements += t->bytes() / sizeof(float);
    }
  }
  // At least one round: the records are how the processes agree, even on nothing.
  x.rounds = std::max<std::uint64_t>(1, (x.mine.elements + slot_floats_ - 1) / slot_floats_);
}

shm_communicator::chunk shm_communicator::chunk_of(const exchange& x, std::uint64_t r) const {
  const std::size_t first = (r - x.first_round) * slot_floats_;
  return {first, std::min<std::size_t>(slot_floats_, x.mine.elements - first)};
}

void shm_communicator::waiting(const exchange& x, std::vector<int> processes) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (aborted_) throw error(x.call.label + ": " + *aborted_);
  if (auto broken = group_.broken()) throw error(x.call.label + ": " + *broken);
  network_wait& w = awaited_[x.call.sequence];
  if (w.label.empty()) {
    w.sequence = x.call.sequence;
    w.label = x.call.label;
    w.since_ns = steady_ns();
  }
  w.processes = std::move(processes);
}

void shm_communicator::write_chunk(const exchange& x, std::uint64_t r) const {
  const std::uint64_t parity = r & 1;
  const int me = process_rank();
  if (x.mine.flags != 0) return;
  if (x.call.what == collective_call::kind::broadcast && static_cast<int>(x.mine.root) != me) return;
  const chunk c = chunk_of(x, r);
  float* slot = segment_->slot(me, parity);
  for_each_piece(x.buffers, c.first, c.count, [slot](float* values, std::size_t offset, std::size_t count) {
    std::memcpy(slot + offset, values, count * sizeof(float));
  });
}

void shm_communicator::read_chunk(const exchange& x, std::uint64_t r) const {
  using kind = collective_call::kind;
  const std::uint64_t parity = r & 1;
  const int me = process_rank(), root = static_cast<int>(x.mine.root);
  const chunk c = chunk_of(x, r);
  if (x.call.what == kind::broadcast) {
    if (me == root) return;
    const float* from = segment_->slot(root, parity);
    for_each_piece(x.buffers, c.first, c.count, [from](float* values, std::size_t offset, std::size_t count) {
      std::memcpy(values, from + offset, count * sizeof(float));
    });
    return;
  }
  // A reduce leaves the other processes' leads with their local sums, as the other backends.
  if (x.call.what == kind::reduce && me != root) return;
  std::vector<const float*> slots;
  for (int p = 0; p < segment_->processes(); ++p) slots.push_back(segment_->slot(p, parity));
  for_each_piece(x.buffers, c.first, c.count, [&slots](float* values, std::size_t offset, std::size_t count) {
    sum_in_rank_order(slots, offset, count, values);
  });
}

std::optional<std::string> shm_communicator::check_records(const exchange& x, std::uint64_t parity) const {
  for (int p = 0; p < segment_->processes(); ++p) {
    const shm_segment::record& theirs = segment_->of(p).records[parity];
    const std::string who = "process rank " + std::to_string(p);
    if (theirs.flags & shm_segment::failed_stream) return "failed on " + who;
    if (theirs.flags & shm_segment::bad_buffer) return "a buffer is missing or not FP32 on " + who;
  }
  for (int p = 0; p < segment_->processes(); ++p) {
    const shm_segment::record& theirs = segment_->of(p).records[parity];
    if (theirs.sequence != x.mine.sequence || theirs.kind != x.mine.kind || theirs.root != x.mine.root ||
        theirs.elements != x.mine.elements)
      return "the processes disagree on the collective (this one runs " + to_string(x.call.what) +
             " #" + std::to_string(x.mine.sequence) + " to process rank " + std::to_string(x.mine.root) + " over " +
             std::to_string(x.mine.elements) + " floats; process rank " + std::to_string(p) + " runs #" +
             std::to_string(theirs.sequence) + " over " + std::to_string(theirs.elements) + " floats)";
  }
  return std::nullopt;
}

void shm_communicator::finish(exchange& x, std::uint64_t next_round) {
  round_ = next_round;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    awaited_.erase(x.call.sequence);
    pending_.fetch_sub(1);
  }
  finished_.store(x.turn + 1, std::memory_order_release);
  notify_progress(); // the next exchange may wait on another place's stream
}

bool shm_communicator::poll(exchange& x, bool stream_failed) {
  // Collectives take their turns in launch order (which is sequence order): the rounds'
  // numbering is shared by every process.
  if (finished_.load(std::memory_order_acquire) != x.turn) {
    waiting(x, {});
    return false;
  }
  if (!x.started) start(x, stream_failed);
  shm_segment::control& own = segment_->of(process_rank());
  for (;;) {
    const std::uint64_t r = x.first_round + x.index, parity = r & 1;
    if (!x.posted) {
      // Round r reuses round r - 2's slots: everyone must have read those.
      if (r >= 2) {
        std::vector<int> late = segment_->behind(&shm_segment::control::done, r - 1);
        if (!late.empty()) {
          waiting(x, std::move(late));
          return false;
        }
      }
      own.records[parity] = x.mine;
      write_chunk(x, r);
      own.posted.store(r + 1, std::memory_order_release);
      segment_->signal();
      x.posted = true;
    }
    std::vector<int> late = segment_->behind(&shm_segment::control::posted, r + 1);
    if (!late.empty()) {
      waiting(x, std::move(late));
      return false;
    }
    const std::optional<std::string> problem = check_records(x, parity);
    if (!problem) read_chunk(x, r);
    own.done.store(r + 1, std::memory_order_release);
    segment_->signal();
    x.posted = false;
    if (!problem && ++x.index < x.rounds) continue;
    // Every process saw the same records: all stop after this round.
    finish(x, r + 1);
    if (stream_failed) return true; // the stream carries its own failure
    if (problem) throw error(x.call.label + ": " + *problem);
    return true;
  }
}

std::optional<std::vector<staged_communicator::network_wait>> shm_communicator::network_waits() const {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<network_wait> out;
  for (const auto& [sequence, w] : awaited_)
    if (!w.processes.empty()) out.push_back(w);
  return out;
}

void shm_communicator::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_watcher_.wait(lock, [this] { return stopping_ || pending_.load() > 0; });
    if (stopping_) return;
    lock.unlock();
    // Another process's post usually follows within microseconds while a stage runs: look
    // (yielding the core) before sleeping on the futex word. A timed-out sleep still
    // notifies, so that a poll sees a lost process (the group broke) or an abort.
    const std::uint32_t seen = segment_->generation();
    if (!spin_until(std::chrono::microseconds(50), [&] { return segment_->generation() != seen; }))
      segment_->wait(seen, std::chrono::milliseconds(2));
    notify_progress();
    lock.lock();
  }
}

} // namespace pe

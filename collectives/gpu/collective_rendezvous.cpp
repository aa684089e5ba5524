#include "collectives/gpu/collective_rendezvous.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/steady_clock.hpp"

namespace pe {

collective_rendezvous::collective_rendezvous(int ranks, int first_rank)
    : ranks_(ranks), first_rank_(first_rank), next_(static_cast<std::size_t>(ranks > 0 ? ranks : 0), 0) {
  if (ranks < 1) throw error("collective_rendezvous: at least one rank is needed");
}

std::optional<std::string> collective_rendezvous::check(const collective_call& call,
                                                        const std::vector<arrival>& by_rank, int first_rank) {
  const bool broadcast = call.what == collective_call::kind::broadcast;
  // The root's local index, when the root is one of these ranks.
  const int root = call.root - first_rank;
  const bool local_root = root >= 0 && root < static_cast<int>(by_rank.size());
  const std::size_t reference = broadcast && local_root ? static_cast<std::size_t>(root) : 0;
  const auto& first = by_rank[reference].buffers;
  const auto global = [&](std::size_t r) { return std::to_string(first_rank + static_cast<int>(r)); };
  for (std::size_t r = 0; r < by_rank.size(); ++r) {
    const arrival& a = by_rank[r];
    if (a.call.what != call.what || a.call.root != call.root)
      return call.label + ": rank " + global(r) + " runs " + a.call.label + " (root " +
             std::to_string(a.call.root) + "), rank " + global(0) + " " + call.label + " (root " +
             std::to_string(call.root) + ")";
    if (a.buffers.size() != first.size())
      return call.label + ": rank " + global(r) + " brought " + std::to_string(a.buffers.size()) + " buffers, rank " +
             global(reference) + " " + std::to_string(first.size());
    // A broadcast's other buffers take the root's size in issue (a local root) or must hold
    // it already (a root in another process).
    if (broadcast && static_cast<int>(r) != root) continue;
    for (std::size_t v = 0; v < a.buffers.size(); ++v) {
      const tensor* t = a.buffers[v];
      if (t == nullptr || !t->initialized() || t->type() != dtype::fp32)
        return call.label + ": the input on rank " + global(r) + " is missing or not FP32";
      if (t->numel() != first[v]->numel())
        return call.label + ": ranks disagree on the size (" + to_string(t->shape()) + " vs " +
               to_string(first[v]->shape()) + ")";
    }
  }
  return std::nullopt;
}

void collective_rendezvous::meet(int rank, arrival a, bool failed, const issue_fn& issue) {
  const collective_call call = a.call;
  if (rank < 0 || rank >= ranks_)
    throw error(call.label + ": rank " + std::to_string(rank) + " outside a communicator of " +
                std::to_string(ranks_));
  std::unique_lock<std::mutex> lock(mutex_);
  if (broken_) throw error(*broken_);
  std::uint64_t& expected = next_[static_cast<std::size_t>(rank)];
  if (call.sequence != expected) {
    broken_ = call.label + ": rank " + std::to_string(rank) + " launched collective #" +
              std::to_string(call.sequence) + " where #" + std::to_string(expected) +
              " was due (the places issue collectives in different orders)";
    changed_.notify_all();
    throw error(*broken_);
  }
  ++expected;
  meeting& m = meetings_[call.sequence];
  if (m.by_rank.empty()) {
    m.by_rank.resize(static_cast<std::size_t>(ranks_));
    m.arrived.assign(static_cast<std::size_t>(ranks_), false);
  }
  m.by_rank[static_cast<std::size_t>(rank)] = std::move(a);
  m.arrived[static_cast<std::size_t>(rank)] = true;
  if (failed && !m.failure)
    m.failure = call.label + ": rank " + std::to_string(rank) + "'s stream had failed before it";
  if (++m.count == ranks_) {
    // The last arrival: every rank's part is here, so the checks see all of them.
    if (!m.failure) m.failure = check(m.by_rank.front().call, m.by_rank, first_rank_);
    if (!m.failure) {
      lock.unlock(); // issuing may take a while (NCCL's group end); nobody else touches m
      std::optional<std::string> issue_failure;
      try {
        issue(m.by_rank);
      } catch (const std::exception& e) {
        issue_failure = call.label + ": " + e.what();
      }
      lock.lock();
      m.failure = issue_failure;
    }
    m.done = true;
    changed_.notify_all();
  } else {
    changed_.wait(lock, [&] { return m.done || broken_.has_value(); });
  }
  // Every rank leaves once; the last to leave forgets the meeting.
  const std::optional<std::string> failure = m.done ? m.failure : broken_;
  if (m.done && ++m.left == ranks_) meetings_.erase(call.sequence);
  if (failure) throw error(*failure);
}

struct collective_rendezvous::span_join {
  std::mutex mutex;
  int enqueued = 0;
  int waiting = 0;
  collective_span span{std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  communicator::completion done;

  void add(const stream::work_span& part) {
    communicator::completion finish;
    collective_span joined;
    {
      std::lock_guard<std::mutex> guard(mutex);
      span.start_ns = std::max(span.start_ns, part.start_ns);
      span.end_ns = std::min(span.end_ns, part.end_ns);
      if (--waiting > 0) return;
      finish = std::move(done);
      joined = {span.start_ns, std::max(span.start_ns, span.end_ns)};
    }
    if (finish) finish(joined, true);
  }
};

void collective_rendezvous::enqueue_part(int rank, const collective_call& call, std::vector<tensor*> buffers,
                                         stream& on, void* native, communicator::completion done, issue_fn issue) {
  auto part = [this, rank, call, buffers = std::move(buffers), native, done,
               issue = std::move(issue)](bool failed) {
    const std::int64_t start = steady_ns();
    try {
      meet(rank, {call, buffers, native}, failed, issue);
    } catch (...) {
      if (done) done({start, steady_ns()}, false);
      throw;
    }
    if (done && !call.timed) done({start, steady_ns()}, true);
  };
  if (!call.timed) return on.enqueue_always(std::move(part));

  std::shared_ptr<span_join> join;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto& slot = joins_[call.sequence];
    if (slot == nullptr) {
      slot = std::make_shared<span_join>();
      slot->waiting = ranks_;
    }
    join = slot;
    if (done) join->done = std::move(done);
    if (++join->enqueued == ranks_) joins_.erase(call.sequence); // every rank's sink holds it
  }
  on.enqueue_always_timed(std::move(part), [join](const stream::work_span& s) { join->add(s); });
}

void collective_rendezvous::abort(const std::string& why) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!broken_) broken_ = why;
  joins_.clear();
  changed_.notify_all();
}

} // namespace pe

#include "collectives/cpu/inproc_communicator.hpp"

#include <cstring>

#include "collectives/cpu/cpu_collective.hpp"
#include "collectives/dense_rows.hpp"
#include "core/error.hpp"
#include "core/selected_rows.hpp"
#include "core/steady_clock.hpp"
#include "devices/progress.hpp"

namespace pe {

namespace {

cpu_collective::kind kind_of(collective_call::kind k) {
  switch (k) {
    case collective_call::kind::all_reduce: return cpu_collective::kind::all_reduce;
    case collective_call::kind::reduce: return cpu_collective::kind::reduce;
    case collective_call::kind::broadcast: return cpu_collective::kind::broadcast;
    case collective_call::kind::all_gather: break; // not a cpu_collective: compute() gathers
  }
  return cpu_collective::kind::all_reduce;
}

} // namespace

inproc_communicator::inproc_communicator(int ranks)
    : ranks_(ranks), next_(static_cast<std::size_t>(ranks), 0),
      history_(static_cast<std::size_t>(ranks)) {
  if (ranks < 1) throw error("inproc_communicator: at least one rank is needed");
}

void inproc_communicator::launch(const collective_call& call, int local_rank,
                                 std::vector<tensor*> buffers, stream& on, completion done) {
  if (local_rank < 0 || local_rank >= ranks_)
    throw error(call.label + ": rank " + std::to_string(local_rank) + " outside a communicator of " +
                std::to_string(ranks_));
  if (call.root < 0 || call.root >= ranks_)
    throw error(call.label + ": root rank " + std::to_string(call.root) +
                " outside a communicator of " + std::to_string(ranks_));
  // The parts read and write the buffers as host memory.
  if (on.where().type != place::kind::cpu)
    throw error(call.label + ": the in-process communicator runs on CPU places, not on " +
                to_string(on.where()));
  auto state = std::make_shared<part>(part{call, local_rank, std::move(buffers), std::move(done)});
  if (call.inputs_ready && ranks_ > 1) {
    {
      std::lock_guard<spin_mutex> guard(mutex_);
      launched_[{local_rank, call.sequence}] = state;
    }
    notify_progress(); // a rank already waiting in this meeting may now join for this one
  }
  on.enqueue_polled([this, state](bool failed) { return poll(*state, failed); });
}

void inproc_communicator::abort() {
  {
    std::lock_guard<spin_mutex> guard(mutex_);
    if (!broken_) broken_ = "the communicator was aborted (the executor is being destroyed)";
  }
  notify_progress(); // parked ranks poll again and fail
}

std::vector<std::vector<std::uint64_t>> inproc_communicator::history() const {
  std::lock_guard<spin_mutex> guard(mutex_);
  return history_;
}

std::optional<communicator_status> inproc_communicator::status() const {
  std::lock_guard<spin_mutex> guard(mutex_);
  communicator_status out;
  out.next_sequence = next_;
  for (const auto& [sequence, m] : meetings_) {
    if (m.joined == 0) continue;
    collective_status c;
    c.sequence = sequence;
    c.label = m.call.label;
    c.first_join_ns = m.first_join_ns;
    for (int r = 0; r < ranks_; ++r) {
      if (m.joined_by[static_cast<std::size_t>(r)] != 0) c.joined.push_back(r);
      if (m.finished_by[static_cast<std::size_t>(r)] != 0) c.finished.push_back(r);
    }
    out.pending.push_back(std::move(c));
  }
  return out;
}

namespace {

/// "all_reduce(fc_0.w_0@GRAD) (all_reduce, root 0) over 2 buffers (FP32 [100, 10], FP32
/// [10])": what a rank called, as a desync error names it (the shape gives the element count).
std::string describe_call(const collective_call& c, const std::vector<tensor*>& buffers) {
  std::string out = c.label + " (" + to_string(c.what) + ", root " + std::to_string(c.root) + ") over " +
                    std::to_string(buffers.size()) + " buffer" + (buffers.size() == 1 ? "" : "s") + " (";
  for (std::size_t v = 0; v < buffers.size(); ++v) {
    if (v > 0) out += ", ";
    const tensor* t = buffers[v];
    out += t->initialized() ? to_string(t->type()) + " " + to_string(t->shape()) : "no value";
  }
  return out + ")";
}

} // namespace

std::optional<std::string> inproc_communicator::mismatch(const meeting& m, const part& p) {
  const collective_call& a = m.call;
  const collective_call& b = p.call;
  const auto& theirs = m.buffers[static_cast<std::size_t>(m.first_rank)];
  bool differ = a.what != b.what || a.root != b.root || a.label != b.label || a.exchange != b.exchange ||
                theirs.size() != p.buffers.size();
  // A broadcast's receivers may hold anything before it: their buffers take the root's. A
  // buffer without a value is a failed writer's (the collective fails for that, not as a
  // desync), so only two values are compared.
  // An all-gather's row counts differ by rank (check() compares widths and heights).
  const bool sized = a.what != collective_call::kind::broadcast && a.what != collective_call::kind::all_gather;
  for (std::size_t v = 0; !differ && sized && v < theirs.size(); ++v) {
    const tensor* x = theirs[v];
    const tensor* y = p.buffers[v];
    differ = x->initialized() && y->initialized() && (x->type() != y->type() || x->numel() != y->numel());
  }
  if (!differ) return std::nullopt;
  return "collective #" + std::to_string(b.sequence) + " differs between ranks: rank " +
         std::to_string(m.first_rank) + " calls " + describe_call(a, theirs) + ", rank " +
         std::to_string(p.rank) + " calls " + describe_call(b, p.buffers);
}

namespace {

/// An all-gather's inputs: every rank's buffer v a SELECTED_ROWS value, FP32, of rank 0's
/// width and height. The first problem, naming rank and variable; none when they agree.
std::optional<std::string> check_gather(const collective_call& c, const std::vector<std::vector<tensor*>>& buffers) {
  const auto& first = buffers[0];
  for (std::size_t r = 0; r < buffers.size(); ++r)
    for (std::size_t v = 0; v < buffers[r].size(); ++v) {
      const tensor* t = buffers[r][v];
      const std::string which = c.label + ": rank " + std::to_string(r) + "'s variable " + std::to_string(v);
      if (!t->initialized() || t->type() != dtype::fp32 || !t->sparse_rows())
        return which + " is missing, not FP32 or not SELECTED_ROWS (all_gather moves sparse gradients only)";
      if (t->dim(1) != first[v]->dim(1) || t->sparse_rows()->height() != first[v]->sparse_rows()->height())
        return which + " has rows of width " + std::to_string(t->dim(1)) + " in a table of " +
               std::to_string(t->sparse_rows()->height()) + " rows, rank 0's width " +
               std::to_string(first[v]->dim(1)) + " and " + std::to_string(first[v]->sparse_rows()->height()) +
               " rows";
    }
  return std::nullopt;
}

/// Every rank's rows and values of variable v on `where`: concatenated in rank order, or with
/// `dense` each touched row once with its sum over the ranks in rank order (dense_rows.hpp,
/// what a dense all-reduce of the ranks' tables gives).
tensor gather_rows(const std::vector<std::vector<tensor*>>& buffers, std::size_t v, place where, bool dense) {
  std::vector<const tensor*> parts;
  for (const auto& rank : buffers) parts.push_back(rank[v]);
  if (!dense) return concat_selected_rows(parts, where);
  tensor table = dense_rows_table(parts[0]->sparse_rows()->height(), parts[0]->dim(1), where);
  for (const tensor* part : parts) add_rows_densely(*part, table);
  return touched_rows(table, where);
}

/// Whether the gather of `buffers` (checked) takes the dense all-reduce under `mode`: from
/// the rows of every rank and the tables' sizes, over every variable of the call.
bool takes_dense(sparse_exchange mode, const std::vector<std::vector<tensor*>>& buffers) {
  sparse_exchange_cost cost;
  for (std::size_t v = 0; v < buffers[0].size(); ++v) {
    std::int64_t rows = 0;
    for (const auto& rank : buffers) rows += rank[v]->dim(0);
    cost.add(rows, buffers[0][v]->sparse_rows()->height(), buffers[0][v]->dim(1));
  }
  return cost.takes_dense(mode);
}

} // namespace

std::optional<std::string> inproc_communicator::check(meeting& m) {
  const collective_call& c = m.call;
  if (c.what == collective_call::kind::all_gather) {
    for (std::size_t r = 0; r < m.buffers.size(); ++r)
      if (m.buffers[r].size() != m.buffers[0].size())
        return c.label + ": rank " + std::to_string(r) + " brought " + std::to_string(m.buffers[r].size()) +
               " buffers, rank 0 " + std::to_string(m.buffers[0].size());
    if (auto why = check_gather(c, m.buffers)) return why;
    m.dense = takes_dense(c.exchange, m.buffers);
    m.span.dense_fallback = m.dense;
    return std::nullopt;
  }
  const bool broadcast = c.what == collective_call::kind::broadcast;
  const auto& first = m.buffers[static_cast<std::size_t>(broadcast ? c.root : 0)];
  for (std::size_t r = 0; r < m.buffers.size(); ++r) {
    const auto& mine = m.buffers[r];
    if (mine.size() != first.size())
      return c.label + ": rank " + std::to_string(r) + " brought " + std::to_string(mine.size()) +
             " buffers, rank 0 " + std::to_string(first.size());
    if (broadcast && static_cast<int>(r) != c.root) continue; // resized to the root's below
    for (std::size_t v = 0; v < mine.size(); ++v) {
      if (!mine[v]->initialized() || mine[v]->type() != dtype::fp32)
        return c.label + ": the input on rank " + std::to_string(r) + " is missing or not FP32";
      if (mine[v]->numel() != first[v]->numel())
        return c.label + ": ranks disagree on the size (" + to_string(mine[v]->shape()) + " vs " +
               to_string(first[v]->shape()) + ")";
    }
  }
  return std::nullopt;
}

void inproc_communicator::compute(meeting& m, int rank, int ranks) {
  const collective_call& c = m.call;
  if (c.what == collective_call::kind::all_gather) {
    // Only read here: the others may still be gathering from this rank's buffers.
    auto& mine = m.gathered[static_cast<std::size_t>(rank)];
    const auto& own = m.buffers[static_cast<std::size_t>(rank)];
    for (std::size_t v = 0; v < own.size(); ++v) mine.push_back(gather_rows(m.buffers, v, own[v]->where(), m.dense));
    return;
  }
  if (c.what == collective_call::kind::broadcast) {
    // Each rank copies the root's values into its own buffers: only its own are written.
    if (rank == c.root) return;
    const auto& from = m.buffers[static_cast<std::size_t>(c.root)];
    auto& to = m.buffers[static_cast<std::size_t>(rank)];
    for (std::size_t v = 0; v < to.size(); ++v) {
      to[v]->resize(dtype::fp32, from[v]->shape());
      std::memcpy(to[v]->raw(), from[v]->raw(), from[v]->bytes());
      to[v]->set_sparse_rows(from[v]->sparse_rows()); // a SELECTED_ROWS value stays one
    }
    return;
  }
  cpu_collective work;
  work.what = kind_of(c.what);
  work.root = c.root;
  for (std::size_t v = 0; v < m.buffers[0].size(); ++v) {
    std::vector<float*> places;
    for (auto& rank_buffers : m.buffers) places.push_back(rank_buffers[v]->data<float>());
    work.buffers.push_back(std::move(places));
    work.sizes.push_back(static_cast<std::size_t>(m.buffers[0][v]->numel()));
  }
  work.run_chunk(static_cast<std::size_t>(rank), static_cast<std::size_t>(ranks));
}

void inproc_communicator::join(part& p, bool stream_failed, std::unique_lock<spin_mutex>& lock) {
  const collective_call& call = p.call;
  auto& expected = next_[static_cast<std::size_t>(p.rank)];
  if (call.sequence != expected) {
    broken_ = "rank " + std::to_string(p.rank) + " launched collective #" +
              std::to_string(call.sequence) + " (" + call.label + ") where it expected #" +
              std::to_string(expected) + ": the ranks issue collectives in different orders";
    throw error(*broken_);
  }
  ++expected;
  history_[static_cast<std::size_t>(p.rank)].push_back(call.sequence);

  meeting& m = meetings_[call.sequence];
  if (m.joined == 0) {
    m.call = call;
    m.first_rank = p.rank;
    m.buffers.resize(static_cast<std::size_t>(ranks_));
    m.joined_by.assign(static_cast<std::size_t>(ranks_), 0);
    m.finished_by.assign(static_cast<std::size_t>(ranks_), 0);
    m.gathered.resize(static_cast<std::size_t>(ranks_));
    m.first_join_ns = steady_ns();
  } else if (auto why = mismatch(m, p)) {
    // Checked as each rank joins: the ranks fail at once, before any bytes are combined.
    broken_ = *why;
    throw error(*broken_);
  }
  m.buffers[static_cast<std::size_t>(p.rank)] = p.buffers;
  m.joined_by[static_cast<std::size_t>(p.rank)] = 1;
  if (p.done) m.done = p.done;
  if (stream_failed && !m.failure)
    m.failure = call.label + ": skipped after an earlier failure on rank " + std::to_string(p.rank);
  p.joined = true;
  if (++m.joined == ranks_) {
    if (!m.failure) m.failure = check(m);
    m.span.start_ns = steady_ns();
  }
  (void)lock;
}

void inproc_communicator::join_for_others(const part& p, std::unique_lock<spin_mutex>& lock) {
  if (failed_once_) return;
  meeting& m = meetings_.at(p.call.sequence);
  for (int r = 0; r < ranks_ && m.joined < ranks_; ++r) {
    if (m.joined_by[static_cast<std::size_t>(r)] != 0 || next_[static_cast<std::size_t>(r)] != p.call.sequence)
      continue;
    auto it = launched_.find({r, p.call.sequence});
    if (it == launched_.end()) continue;
    part& other = *it->second;
    // Events of this process's streams, queried without blocking (under the lock: a query
    // takes only its stream's own lock).
    if (!other.call.inputs_ready || !other.call.inputs_ready()) continue;
    join(other, false, lock);
    m.one_computes = true; // the helped rank's thread is elsewhere: whoever completes computes all
  }
}

bool inproc_communicator::poll(part& p, bool stream_failed) {
  const collective_call& call = p.call;
  std::unique_lock<spin_mutex> lock(mutex_);
  // A rank that joins or finishes its chunk may let the parked ranks go on: tell them. A
  // poll that changed nothing tells nobody, or waiting ranks would poll each other forever.
  struct notify_on_change {
    bool changed = false;
    ~notify_on_change() {
      if (changed) notify_progress();
    }
  } notify;
  if (broken_) throw error(call.label + ": " + *broken_);
  if (!p.joined) {
    notify.changed = true; // also when join throws: the others must see the break
    join(p, stream_failed, lock);
    p.sound = !stream_failed;
  }
  meeting& m = meetings_.at(call.sequence);
  // At every poll while waiting: the others' parts may have been launched, or their inputs
  // written, since the last one.
  if (m.joined < ranks_ && p.sound) {
    const int before = m.joined;
    join_for_others(p, lock);
    if (m.joined != before) notify.changed = true;
  }
  if (m.joined < ranks_) return false;

  if (m.one_computes && !p.computed && m.finished_by[static_cast<std::size_t>(p.rank)] != 0)
    p.computed = true; // another rank computed this one's part
  if (!p.computed) {
    // Decided under the lock, by the first rank here once all joined: with one_computes set
    // no other rank computes after this.
    const bool alone = m.one_computes;
    if (alone) m.finished_by.assign(static_cast<std::size_t>(ranks_), 1);
    if (!m.failure) {
      lock.unlock();
      std::optional<std::string> failure;
      try {
        if (alone)
          for (int r = 0; r < ranks_; ++r) compute(m, r, ranks_);
        else
          compute(m, p.rank, ranks_);
      } catch (const std::exception& e) {
        failure = call.label + ": " + e.what();
      }
      lock.lock();
      if (failure && !m.failure) m.failure = failure;
    }
    p.computed = true;
    m.finished_by[static_cast<std::size_t>(p.rank)] = 1;
    notify.changed = true;
    if (alone) m.finished = ranks_ - 1;
    if (++m.finished == ranks_) {
      if (m.failure) failed_once_ = true;
      m.span.end_ns = steady_ns();
      // Every rank has read every input: each rank's gathered rows go to its buffers now,
      // before the completion, which may release those buffers (a place that does not read
      // them: a sparse table's non-owner in reduce mode). Taken by each rank after the
      // report, they raced with that release (a double free, ASan).
      if (!m.failure && call.what == collective_call::kind::all_gather)
        for (std::size_t r = 0; r < m.gathered.size(); ++r)
          for (std::size_t v = 0; v < m.gathered[r].size(); ++v) *m.buffers[r][v] = std::move(m.gathered[r][v]);
      // The last rank to finish reports once; every rank's part is done only after this
      // returns on its own stream, and readers wait on every rank's event.
      completion finish = m.done;
      const collective_span span = m.span;
      const bool ok = !m.failure;
      lock.unlock();
      if (finish) finish(span, ok);
      lock.lock();
    }
  }
  if (m.finished < ranks_) return false;
  const std::optional<std::string> failure = m.failure;
  launched_.erase({p.rank, call.sequence});
  if (++m.left == ranks_) meetings_.erase(call.sequence);
  if (failure) throw error(*failure);
  return true;
}

} // namespace pe

#include "collectives/net/staged_communicator.hpp"

#include "core/error.hpp"

namespace pe {

staged_communicator::staged_communicator(int process_rank, int processes, int local_ranks)
    : process_rank_(process_rank), processes_(processes), local_ranks_(local_ranks), local_(local_ranks) {}

void staged_communicator::launch(const collective_call& call, int local_rank,
                                 std::vector<tensor*> buffers, stream& on, completion done) {
  using kind = collective_call::kind;
  expect_runs(call);
  if (call.root < 0 || call.root >= world_size())
    throw error(call.label + ": root rank " + std::to_string(call.root) + " outside a world of " +
                std::to_string(world_size()));
  const bool rooted = call.what == kind::reduce || call.what == kind::broadcast;
  const int lead = rooted && call.root / local_ranks_ == process_rank_
                       ? call.root % local_ranks_
                       : 0;
  collective_call first = call, last = call;
  first.sequence = 2 * call.sequence;
  last.sequence = 2 * call.sequence + 1;
  first.root = last.root = lead;
  first.what = call.what == kind::broadcast || call.what == kind::all_gather ? call.what : kind::reduce;
  last.what = call.what == kind::reduce ? kind::reduce : kind::broadcast;
  first.exchange = sparse_exchange::sparse; // the local rows all go to the lead, which decides
  // No joining for a busy local rank: the last stage's inputs are the network stage's
  // results, which the engine's events do not cover (inproc_communicator).
  first.inputs_ready = last.inputs_ready = nullptr;
  const std::vector<tensor*> none;
  const std::uint64_t sequence = call.sequence;
  local_.launch(first, local_rank, call.what == kind::broadcast ? none : buffers, on,
                [this, sequence](const collective_span& span, bool) {
                  std::lock_guard<std::mutex> guard(mutex_);
                  started_[sequence] = span.start_ns;
                });
  if (local_rank == lead) launch_exchange(call, buffers, on);
  local_.launch(last, local_rank, call.what == kind::reduce ? none : buffers, on,
                [this, sequence, done = std::move(done)](const collective_span& span, bool ok) {
                  collective_span whole = span;
                  {
                    std::lock_guard<std::mutex> guard(mutex_);
                    whole.start_ns = started_[sequence];
                    started_.erase(sequence);
                    whole.dense_fallback = dense_.erase(sequence) > 0;
                  }
                  if (done) done(whole, ok);
                });
}

void staged_communicator::note_dense_fallback(std::uint64_t sequence) {
  std::lock_guard<std::mutex> guard(mutex_);
  dense_.insert(sequence);
}

std::optional<communicator_status> staged_communicator::status() const {
  const std::optional<communicator_status> local = local_.status();
  const auto waits = network_waits();
  if (!local && !waits) return std::nullopt;
  std::vector<int> every_rank;
  for (int r = 0; r < local_ranks_; ++r) every_rank.push_back(r);
  communicator_status out;
  std::map<std::uint64_t, collective_status> by_call;
  if (local) {
    for (std::uint64_t next : local->next_sequence) out.next_sequence.push_back(next / 2);
    for (const collective_status& stage : local->pending) { // by sequence: stage 1 first
      collective_status& c = by_call[stage.sequence / 2];
      const bool first_stage = stage.sequence % 2 == 0;
      if (c.label.empty()) {
        c.sequence = stage.sequence / 2;
        c.label = stage.label;
        c.joined = first_stage ? stage.joined : every_rank; // stage 1 over: all joined
        c.first_join_ns = stage.first_join_ns;
      }
      if (!first_stage) c.finished = stage.finished;
    }
  }
  if (waits)
    for (const network_wait& w : *waits) {
      collective_status& c = by_call[w.sequence];
      if (c.label.empty()) { // the lead is in the network stage: every local place joined
        c.sequence = w.sequence;
        c.label = w.label;
        c.joined = every_rank;
        c.first_join_ns = w.since_ns;
      }
      c.awaited_processes = w.processes;
    }
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (auto& [sequence, c] : by_call)
      if (auto it = started_.find(sequence); it != started_.end()) c.first_join_ns = it->second;
  }
  for (auto& [sequence, c] : by_call) out.pending.push_back(std::move(c));
  return out;
}

} // namespace pe

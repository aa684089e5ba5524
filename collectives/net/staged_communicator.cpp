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
                  }
                  if (done) done(whole, ok);
                });
}

} // namespace pe

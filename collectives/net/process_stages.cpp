#include "collectives/net/process_stages.hpp"

namespace pe {

process_stages::process_stages(int process_rank, int local_ranks)
    : process_rank_(process_rank), local_ranks_(local_ranks), local_(local_ranks) {}

void process_stages::launch(const collective_call& call, int local_rank,
                            std::vector<tensor*> buffers, stream& on,
                            communicator::completion done,
                            const std::function<void(std::vector<tensor*>)>& exchange) {
  using kind = collective_call::kind;
  const int lead = call.what != kind::all_reduce && call.root / local_ranks_ == process_rank_
                       ? call.root % local_ranks_
                       : 0;
  collective_call first = call, last = call;
  first.sequence = 2 * call.sequence;
  last.sequence = 2 * call.sequence + 1;
  first.root = last.root = lead;
  first.what = call.what == kind::broadcast ? kind::broadcast : kind::reduce;
  last.what = call.what == kind::reduce ? kind::reduce : kind::broadcast;
  const std::vector<tensor*> none;
  const std::uint64_t sequence = call.sequence;
  local_.launch(first, local_rank, call.what == kind::broadcast ? none : buffers, on,
                [this, sequence](const collective_span& span, bool) {
                  std::lock_guard<std::mutex> guard(mutex_);
                  started_[sequence] = span.start_ns;
                });
  if (local_rank == lead) exchange(buffers);
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

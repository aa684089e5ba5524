#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "devices/first_failure.hpp"
#include "devices/stream.hpp"

namespace pe {

/// The contract both kinds of stream keep for each piece of work, written once (with
/// first_failure, which records the failure): the CPU stream (devices/cpu/cpu_stream, stepped
/// by its device's thread, its waits tickets that never block) and the queued stream
/// (devices/queued_stream, a thread of its own driving a device's markers, whose waits block
/// until the record they wait for was made, as a CUDA wait needs) differ in how they order
/// and wait, and in nothing of what follows. tests/stream_contract_test.cpp holds both to it.
///
/// Runs work item `position` of a stream whose failures `failures` records:
/// - plain work (`always` false) is skipped once the stream has failed: it is poisoned;
/// - always-work runs even then, told whether the stream had failed;
/// - what either throws becomes the stream's failure at `position` (the first one wins).
/// `work(bool failed)` returns whether it is finished (polled work may not be yet). Returns
/// that, or true when skipped or thrown: the item then leaves the queue.
template <class Work>
bool run_stream_work(first_failure& failures, std::uint64_t position, bool always, Work&& work) {
  const bool failed = failures.failed();
  if (failed && !always) return true;
  try {
    return std::forward<Work>(work)(failed);
  } catch (...) {
    failures.record(position, stream::caught_failure());
    return true;
  }
}

/// The failure a stream records when it waits on work that failed on `origin` ("the
/// compute stream of gpu:0"): a consequence, so that the executor reports the cause first.
inline stream::failure waited_on_failed_work(const std::string& origin) {
  return {"waited on failed work of " + origin, pe::error_kind::consequence};
}

} // namespace pe

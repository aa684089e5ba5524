#pragma once

#include <chrono>
#include <cstdint>

namespace pe {

/// Progress: something happened that polled work (stream::enqueue_polled) may be waiting
/// for (a rank joined a collective, a packet arrived, a stream finished an item or failed).
/// Whoever makes such progress calls notify_progress(); polled work parked since an older
/// epoch is polled again. One process-wide signal rather than one per waiter: the waiters
/// (collective ranks, network stages) do not know who will let them finish.

/// Advances the epoch, runs the sleep hooks (a CPU device thread's wake-up) and wakes the
/// threads in wait_for_progress(). When nobody sleeps it costs an atomic increment and a
/// load per hook.
void notify_progress();

/// Advanced by every notify_progress().
std::uint64_t progress_epoch();

/// Blocks the calling thread until the epoch moved past `seen` or `limit` passed: for
/// polled work on a stream whose thread may block (stream::enqueue_polled's default).
void wait_for_progress(std::uint64_t seen, std::chrono::microseconds limit);

/// Makes notify_progress() call `hook` from now on (at most 4 hooks, never removed): how a
/// device whose threads sleep on their own condition hears of progress.
void add_progress_hook(void (*hook)());

} // namespace pe

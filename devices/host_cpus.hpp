#pragma once

#include <vector>

namespace pe {

class device;

/// Whether each CPU place's device thread is pinned to a core of its own (pin_places).
enum class place_pinning {
  /// Pinned where the job's places on this host (this process's, or every process's where
  /// the communicator knows: the shared-memory backend) are as many as the cores this
  /// process may use: then no core is spare, and a scheduler that puts two places on one
  /// core while the other idles (it wakes a thread on its waker's core) slows the step.
  when_full,
  always, ///< pinned, round robin when the places outnumber the cores
  never,  ///< left to the scheduler
};

/// The CPUs this process may run on (its affinity mask, as the operating system numbers
/// them), in increasing order; empty where the system does not say.
std::vector<int> allowed_cpus();

/// Pins place i's host thread (device::pin_host_thread) to allowed_cpus()[(first + i) %
/// count]: each CPU place's device thread on a core of its own while there are cores
/// enough, round robin beyond. `first` shifts the choice, so that processes of one machine
/// take different cores (a job's process r passes r x its places). Returns how many threads
/// were pinned: 0 for places without such a thread (GPU places) or a system that refused.
///
/// Why pin at all: on a 2-core machine a step runs two device threads, the thread that runs
/// the step and a CAF worker. Left to the scheduler, a device thread woken by another thread
/// is often placed on the waker's core, where another device thread may be running, while
/// the other core idles (perf sched on the 2-vCPU EPYC). Why not by default: two jobs that
/// each pin their first place share one core.
int pin_places(const std::vector<device*>& devices, int first);

} // namespace pe

#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "core/host_allocator.hpp"
#include "core/spin_mutex.hpp"
#include "devices/cpu/cpu_stream.hpp"
#include "devices/device.hpp"

namespace pe {

/// A copy between tensors in host memory, as a stream task (what cpu_device::copy_work
/// gives): `dst` takes src's dtype, shape and values when the task runs.
stream::task host_copy_work(tensor& dst, const tensor& src);

/// A CPU place: host memory, three streams (compute, communication, copy), and one thread
/// of its own that runs them: the device actor.
///
/// Why one thread per place, not one per stream, and why not a CAF actor: a CPU place has
/// one core's worth of compute to give, like a GPU has its SMs; its streams are concurrent
/// queues, not concurrent processors. One thread that takes the next runnable head of its
/// three FIFOs (the communication stream's first, then copy, then compute) is a detached
/// actor whose mailbox is those FIFOs: N places are N runnable threads, so on a 2-core
/// machine two places never fight a third thread for a core, and a collective waiting for
/// the other places holds only its stream. devices/ stays free of CAF: kernels never see it.
///
/// A task that blocks holds the whole place (as a kernel holds its core): tasks block only
/// where a test makes them. An idle device thread spins briefly (yielding the core) before
/// it sleeps, so back-to-back kernels and the next step's first kernel do not pay a wake-up.
/// With nothing ready on its streams, it runs pieces of the idle work it was offered.
class cpu_device final : public device {
 public:
  explicit cpu_device(place where);
  ~cpu_device() override;

  place where() const override { return place_; }
  allocator& memory() override { return host_allocator::instance(); }
  stream& get_stream(stream_kind kind) override;
  std::unique_ptr<event> make_event() override;
  stream::task copy_work(stream& on, tensor& dst, const tensor& src) override;
  void stop() override;
  bool pin_host_thread(int cpu) override;
  bool offer_idle_work(std::shared_ptr<idle_work> work) override;
  void withdraw_idle_work() override;

  /// Wakes this device's thread: work was enqueued on one of its streams.
  void wake();


 private:
  void run();
  bool any_ready() const;
  /// Runs a piece of the offered idle work, if any is left; drops the offer once none is.
  bool run_idle_piece();

  place place_;
  std::array<std::unique_ptr<cpu_stream>, 3> streams_; // by stream_kind
  std::mutex mutex_;
  std::condition_variable wakeup_;
  bool signaled_ = false; // guarded by mutex_
  std::atomic<bool> sleeping_{false}; // the thread may be about to wait: wake() must signal
  std::atomic<bool> stopping_{false};
  spin_mutex idle_mutex_;
  std::shared_ptr<idle_work> idle_;     // guarded by idle_mutex_
  std::atomic<bool> idle_offered_{false}; // idle_ is set: read without the lock by run()
  std::thread thread_;
};

} // namespace pe

#include "devices/cpu/cpu_device.hpp"

#include <algorithm>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include "core/spin_wait.hpp"
#include "core/tensor.hpp"
#include "devices/idle_work.hpp"
#include "devices/progress.hpp"

namespace pe {

namespace {

/// How long an idle device thread keeps looking for work before it sleeps: long enough to
/// bridge the host's gap between a step's last kernel and the next step's first, short
/// enough not to hold a core that another place needs (it yields while it looks).
constexpr auto idle_spin = std::chrono::microseconds(100);

/// At most this many items of the communication stream run in a row before the next kernel.
constexpr int max_communication_burst = 32;

/// Every CPU device thread that sleeps, so that progress elsewhere can wake it.
struct sleeper_registry {
  std::mutex mutex;
  std::vector<cpu_device*> asleep;
  std::atomic<int> count{0};
};

sleeper_registry& sleepers() {
  static sleeper_registry* r = new sleeper_registry; // never destroyed: threads may outlive statics
  return *r;
}

/// The progress hook (devices/progress.hpp): wakes every sleeping CPU device thread, so that
/// parked polled work is polled again.
void wake_sleepers() {
  sleeper_registry& r = sleepers();
  // seq_cst with run(), which registers and then checks readiness: either it sees this
  // progress, or this sees it registered.
  if (r.count.load() == 0) return;
  std::lock_guard<std::mutex> guard(r.mutex);
  for (cpu_device* d : r.asleep) d->wake();
}

} // namespace

cpu_device::cpu_device(place where) : place_(where) {
  add_progress_hook(&wake_sleepers);
  for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy})
    streams_[static_cast<std::size_t>(kind)] = std::make_unique<cpu_stream>(*this, kind);
  thread_ = std::thread([this] { run(); });
}

cpu_device::~cpu_device() {
  stop();
}

stream& cpu_device::get_stream(stream_kind kind) {
  return *streams_[static_cast<std::size_t>(kind)];
}

std::unique_ptr<event> cpu_device::make_event() {
  return std::make_unique<cpu_event>();
}

stream::task host_copy_work(tensor& dst, const tensor& src) {
  return [&dst, &src] {
    if (!src.initialized()) throw error("copy: the source tensor has no value");
    dst.copy_from(src);
  };
}

stream::task cpu_device::copy_work(stream&, tensor& dst, const tensor& src) {
  return host_copy_work(dst, src);
}

void cpu_device::stop() {
  for (auto& s : streams_) s->stop();
  stopping_ = true;
  wake();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  for (auto& s : streams_) s->drop_queue();
  notify_progress(); // streams of other devices waiting on these fail now
}

bool cpu_device::pin_host_thread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE || !thread_.joinable()) return false;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(thread_.native_handle(), sizeof one, &one) == 0;
}

bool cpu_device::offer_idle_work(std::shared_ptr<idle_work> work) {
  {
    std::lock_guard<spin_mutex> guard(idle_mutex_);
    idle_ = std::move(work);
    idle_offered_ = idle_ != nullptr;
  }
  wake();
  return true;
}

void cpu_device::withdraw_idle_work() {
  std::lock_guard<spin_mutex> guard(idle_mutex_);
  idle_.reset();
  idle_offered_ = false;
}

bool cpu_device::run_idle_piece() {
  if (!idle_offered_.load()) return false;
  std::shared_ptr<idle_work> work;
  {
    std::lock_guard<spin_mutex> guard(idle_mutex_);
    work = idle_;
  }
  if (work && work->run_one()) return true;
  std::lock_guard<spin_mutex> guard(idle_mutex_);
  if (idle_ == work) { // not replaced meanwhile: nothing of it is left to take
    idle_.reset();
    idle_offered_ = false;
  }
  return false;
}

void cpu_device::wake() {
  // seq_cst with run(), which sets sleeping_ and then checks for work: either it sees the
  // work, or this sees it going to sleep. A busy or spinning thread needs no signal.
  if (!sleeping_.load() && !stopping_.load()) return;
  std::lock_guard<std::mutex> guard(mutex_);
  signaled_ = true;
  wakeup_.notify_one();
}

bool cpu_device::any_ready() const {
  return std::any_of(streams_.begin(), streams_.end(), [](const auto& s) { return s->ready(); });
}

void cpu_device::run() {
  // The communication stream first: its heads are cheap (waits, a rank joining), and other
  // places may wait for them; then copies; then kernels.
  const std::array<cpu_stream*, 3> order = {
      streams_[static_cast<std::size_t>(stream_kind::communication)].get(),
      streams_[static_cast<std::size_t>(stream_kind::copy)].get(),
      streams_[static_cast<std::size_t>(stream_kind::compute)].get()};
  sleeper_registry& r = sleepers();
  while (!stopping_.load()) {
    bool progressed = false;
    // The communication stream's ready heads all run before the next kernel: a collective
    // is several items (the waits for its inputs, the local stages, the exchange), and
    // stepping them one per kernel left a collective that other places and processes wait
    // for behind a long kernel (traces of 2 processes: an all-reduce whose inputs were ready
    // joined only after the next mul_grad, 0.5 ms later). Bounded, so that a stream of many
    // ready items cannot starve the kernels.
    for (int i = 0; i < max_communication_burst && order[0]->step(); ++i) progressed = true;
    for (std::size_t s = 1; s < order.size(); ++s) progressed = order[s]->step() || progressed;
    if (progressed) continue;
    // Only now, with nothing ready: the idle work fills the gaps of the place's own work.
    if (run_idle_piece()) continue;

    if (spin_until(idle_spin, [this] { return stopping_.load() || any_ready() || idle_offered_.load(); }))
      continue;

    // Sleep until woken. Registered first, then checked once more: a wake-up that comes
    // between the check and the wait finds signaled_ set.
    {
      std::lock_guard<std::mutex> guard(r.mutex);
      r.asleep.push_back(this);
      r.count.fetch_add(1);
    }
    sleeping_ = true;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!any_ready() && !idle_offered_.load())
        wakeup_.wait(lock, [this] { return signaled_ || stopping_.load(); });
      signaled_ = false;
    }
    sleeping_ = false;
    {
      std::lock_guard<std::mutex> guard(r.mutex);
      r.asleep.erase(std::find(r.asleep.begin(), r.asleep.end(), this));
      r.count.fetch_sub(1);
    }
  }
}

} // namespace pe

#include "tests/support/host_gpu_device.hpp"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>

#include "collectives/communicators.hpp"
#include "collectives/gpu/collective_rendezvous.hpp"
#include "core/error.hpp"
#include "core/host_allocator.hpp"
#include "core/steady_clock.hpp"
#include "core/tensor.hpp"
#include "devices/cpu/cpu_device.hpp"

namespace pe::testing {

namespace {

std::atomic<int> spans_read_count{0};
std::atomic<int> records_count{0};
/// set_simulated_device_lag's lag, and the steady time by which the simulated devices will
/// have finished everything recorded so far.
std::atomic<std::int64_t> lag_ns{0};
std::atomic<std::int64_t> idle_from_ns{0};

/// A marker of the simulated device: the steady time the device finishes the work before it.
struct host_marker {
  std::int64_t ready_ns = 0;
};

class host_backend final : public stream_backend {
 public:
  explicit host_backend(std::string name) : name_(std::move(name)) {}

  marker record() override {
    ++records_count;
    return make_marker();
  }
  marker record_timed() override { return make_marker(); }
  /// The work before it ran at launch; the device "finishes" it `lag` after the later of
  /// now and what this stream already had to finish or wait for.
  marker make_marker() {
    std::lock_guard<std::mutex> guard(mutex_);
    ready_ns_ = std::max(ready_ns_, steady_ns()) + lag_ns.load();
    std::int64_t idle = idle_from_ns.load();
    while (idle < ready_ns_ && !idle_from_ns.compare_exchange_weak(idle, ready_ns_)) {
    }
    return new host_marker{ready_ns_};
  }
  void wait(marker m) override { catch_up(static_cast<host_marker*>(m)->ready_ns); }
  /// When the device will have finished what this stream launched so far.
  std::int64_t ready_ns() {
    std::lock_guard<std::mutex> guard(mutex_);
    return ready_ns_;
  }
  /// Makes the stream's later work wait until the device is at `ns`.
  void catch_up(std::int64_t ns) {
    std::lock_guard<std::mutex> guard(mutex_);
    ready_ns_ = std::max(ready_ns_, ns);
  }
  state query(marker m, std::string&) override {
    return steady_ns() >= static_cast<host_marker*>(m)->ready_ns ? state::done : state::pending;
  }
  void release(marker m) override { delete static_cast<host_marker*>(m); }
  stream::work_span take_span(marker begin, marker end) override {
    const stream::work_span span{static_cast<host_marker*>(begin)->ready_ns,
                                 static_cast<host_marker*>(end)->ready_ns};
    release(begin);
    release(end);
    ++spans_read_count;
    return span;
  }
  std::string describe() const override { return name_; }

 private:
  std::string name_;
  std::mutex mutex_;
  std::int64_t ready_ns_ = 0; // guarded by mutex_
};

} // namespace

host_gpu_device::host_gpu_device(place where) : place_(where) {
  if (where.type.form() != place_form::devices)
    throw error("host_gpu_device: " + to_string(where) + " is not a place on numbered devices");
  for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy})
    streams_[static_cast<std::size_t>(kind)] = std::make_unique<queued_stream>(
        where, kind,
        std::make_shared<host_backend>("the " + to_string(kind) + " stream of " + to_string(where) + " (simulated)"));
}

host_gpu_device::~host_gpu_device() {
  stop();
}

allocator& host_gpu_device::memory() {
  return host_allocator::instance();
}

stream& host_gpu_device::get_stream(stream_kind kind) {
  return *streams_[static_cast<std::size_t>(kind)];
}

std::unique_ptr<event> host_gpu_device::make_event() {
  return std::make_unique<queued_event>();
}

stream::task host_gpu_device::copy_work(stream&, tensor& dst, const tensor& src) {
  return host_copy_work(dst, src);
}

void host_gpu_device::stop() {
  for (auto& s : streams_) s->request_stop(); // all flagged before any is joined
  for (auto& s : streams_) s->stop();
}

int host_gpu_device::spans_read() {
  return spans_read_count.load();
}

int host_gpu_device::markers_recorded() {
  return records_count.load();
}

namespace {

std::atomic<bool> capture_refused{false};

/// A capture whose start the simulated driver refuses (set_simulated_capture_refused).
class refused_capture final : public stream_capture {
 public:
  void begin(stream& origin) override { // as cuda_capture: the reason first, then the stream fails
    origin.enqueue([this] {
      fail("simulated: the driver refused the capture at its start");
      throw error("the simulated driver refused the capture");
    });
  }
  void rejoin(stream& joiner, stream& origin) override {
    joiner.enqueue_always([](bool) {});
    origin.enqueue_always([](bool) {});
  }
  void end(stream& origin) override {
    origin.enqueue_always([this](bool) { fail("simulated: the capture ended without a graph"); });
  }
  void await_end(stream& joiner) override { joiner.enqueue_always([](bool) {}); }
  void replay(stream& origin) override {
    origin.enqueue([] { throw error("a refused capture was replayed"); });
  }
  std::optional<std::string> failure() const override {
    std::lock_guard<std::mutex> guard(mutex_);
    return failure_;
  }
  std::size_t operations() const override { return 0; }

 private:
  void fail(const std::string& why) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!failure_) failure_ = why;
  }

  mutable std::mutex mutex_;
  std::optional<std::string> failure_;
};

} // namespace

std::unique_ptr<stream_capture> host_gpu_device::make_capture() {
  if (!capture_refused.load()) return nullptr;
  return std::make_unique<refused_capture>();
}

void set_simulated_capture_refused(bool refused) {
  capture_refused.store(refused);
}

void set_simulated_device_lag(std::chrono::nanoseconds lag) {
  lag_ns.store(lag.count());
}

bool simulated_devices_idle() {
  return steady_ns() >= idle_from_ns.load();
}

namespace {

/// The GPU collectives of simulated places: the ranks' parts meet as on a GPU, and the last
/// to arrive sums on the host, in rank order, what the shared-GPU reduction sums on the device.
class host_gpu_communicator final : public communicator {
 public:
  explicit host_gpu_communicator(int ranks) : meeting_(ranks) {}

  int world_size() const override { return meeting_.ranks(); }

  void launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers, stream& on,
              completion done) override {
    auto* queued = dynamic_cast<queued_stream*>(&on);
    meeting_.enqueue_part(local_rank, call, std::move(buffers), on, queued != nullptr ? &queued->backend() : nullptr,
                          std::move(done), [](std::vector<collective_rendezvous::arrival>& by_rank) {
                            couple(by_rank);
                            issue(by_rank);
                          });
  }

  void abort() override { meeting_.abort("the executor is going away"); }

 private:
  /// On a GPU no rank's part of a collective ends before every rank's began (the shared-GPU
  /// sum waits for every rank's stream, and every stream waits for the sum): each simulated
  /// stream catches up with the latest of them. Without it a lagging stream's part could end,
  /// on its device clock, before another rank's began.
  static void couple(std::vector<collective_rendezvous::arrival>& by_rank) {
    std::vector<host_backend*> streams;
    std::int64_t latest = 0;
    for (const auto& a : by_rank)
      if (auto* b = dynamic_cast<host_backend*>(static_cast<stream_backend*>(a.stream))) {
        streams.push_back(b);
        latest = std::max(latest, b->ready_ns());
      }
    for (host_backend* b : streams) b->catch_up(latest);
  }

  static void issue(std::vector<collective_rendezvous::arrival>& by_rank) {
    const collective_call& call = by_rank.front().call;
    const auto root = static_cast<std::size_t>(call.root);
    for (std::size_t v = 0; v < by_rank.front().buffers.size(); ++v) {
      if (call.what == collective_call::kind::broadcast) {
        for (std::size_t r = 0; r < by_rank.size(); ++r)
          if (r != root) by_rank[r].buffers[v]->copy_from(*by_rank[root].buffers[v]);
        continue;
      }
      tensor sum = by_rank.front().buffers[v]->clone();
      for (std::size_t r = 1; r < by_rank.size(); ++r) {
        const auto add = by_rank[r].buffers[v]->values<float>();
        auto to = sum.values<float>();
        for (std::size_t i = 0; i < to.size(); ++i) to[i] += add[i];
      }
      for (std::size_t r = 0; r < by_rank.size(); ++r)
        if (call.what == collective_call::kind::all_reduce || r == root) by_rank[r].buffers[v]->copy_from(sum);
    }
  }

  collective_rendezvous meeting_;
};

} // namespace

void simulate_places_of(place::kind kind) {
  register_device(kind, [](place p) { return std::make_unique<host_gpu_device>(p); });
  register_communicator(kind, [](const std::vector<device*>& devices, process_group* group) {
    if (group != nullptr) throw error("simulated places train in one process only");
    return std::make_unique<host_gpu_communicator>(static_cast<int>(devices.size()));
  });
}

void simulate_gpu_places() {
  simulate_places_of(place::kind::gpu);
}

} // namespace pe::testing

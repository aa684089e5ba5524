#include "tests/support/host_gpu_device.hpp"

#include <cstdint>
#include <string>

#include "collectives/communicators.hpp"
#include "collectives/gpu/collective_rendezvous.hpp"
#include "devices/cpu/cpu_device.hpp"
#include "devices/cpu/host_allocator.hpp"
#include "devices/error.hpp"
#include "devices/steady_clock.hpp"
#include "devices/tensor.hpp"

namespace pe::testing {

namespace {

std::atomic<int> spans_read_count{0};

/// A marker of the simulated device: complete at once, stamped when recorded.
struct host_marker {
  std::int64_t stamp_ns = 0;
};

class host_backend final : public stream_backend {
 public:
  explicit host_backend(std::string name) : name_(std::move(name)) {}

  marker record() override { return new host_marker{steady_ns()}; }
  marker record_timed() override { return record(); }
  void wait(marker) override {} // the waited-for work ran before its record was reached
  state query(marker, std::string&) override { return state::done; }
  void release(marker m) override { delete static_cast<host_marker*>(m); }
  stream::work_span take_span(marker begin, marker end) override {
    const stream::work_span span{static_cast<host_marker*>(begin)->stamp_ns,
                                 static_cast<host_marker*>(end)->stamp_ns};
    release(begin);
    release(end);
    ++spans_read_count;
    return span;
  }
  std::string describe() const override { return name_; }

 private:
  std::string name_;
};

} // namespace

host_gpu_device::host_gpu_device(place where) : place_(where) {
  if (where.type != place::kind::gpu) throw error("host_gpu_device: " + to_string(where) + " is not a GPU place");
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
  for (auto& s : streams_) s->stop();
}

int host_gpu_device::spans_read() {
  return spans_read_count.load();
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
    meeting_.enqueue_part(local_rank, call, std::move(buffers), on, nullptr, std::move(done),
                          [](std::vector<collective_rendezvous::arrival>& by_rank) { issue(by_rank); });
  }

  void abort() override { meeting_.abort("the executor is going away"); }

 private:
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

void simulate_gpu_places() {
  register_device(place::kind::gpu, [](place p) { return std::make_unique<host_gpu_device>(p); });
  register_communicator(place::kind::gpu, [](const std::vector<device*>& devices, process_group* group) {
    if (group != nullptr) throw error("simulated GPU places train in one process only");
    return std::make_unique<host_gpu_communicator>(static_cast<int>(devices.size()));
  });
}

} // namespace pe::testing

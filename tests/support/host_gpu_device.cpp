#include "tests/support/host_gpu_device.hpp"

#include <cstdint>
#include <string>

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
  return [&dst, &src] {
    if (!src.initialized()) throw error("copy: the source tensor has no value");
    dst.copy_from(src);
  };
}

void host_gpu_device::stop() {
  for (auto& s : streams_) s->stop();
}

int host_gpu_device::spans_read() {
  return spans_read_count.load();
}

void simulate_gpu_places() {
  register_device(place::kind::gpu, [](place p) { return std::make_unique<host_gpu_device>(p); });
}

} // namespace pe::testing

#include "actors/trace.hpp"

#include <algorithm>
#include <atomic>

#include "core/steady_clock.hpp"

namespace pe {

struct trace_recorder::thread_buffer {
  int thread;
  std::vector<trace_event> events;
};

namespace {

std::atomic<std::uint64_t> next_recorder_id{1};

/// The calling thread's buffer for the recorder it last recorded into.
struct thread_cache {
  std::uint64_t recorder = 0;
  void* buffer = nullptr;
};
thread_local thread_cache cache;

} // namespace

trace_recorder::trace_recorder(std::uint64_t first_step, std::uint64_t last_step)
    : id_(next_recorder_id.fetch_add(1)), first_(first_step), last_(last_step),
      origin_ns_(steady_ns()) {}

trace_recorder::~trace_recorder() = default;

std::int64_t trace_recorder::now_ns() const {
  return steady_ns() - origin_ns_;
}

trace_recorder::thread_buffer& trace_recorder::local_buffer() {
  if (cache.recorder != id_) {
    std::lock_guard<std::mutex> guard(registry_mutex_);
    buffers_.push_back(std::make_unique<thread_buffer>(
        thread_buffer{static_cast<int>(buffers_.size()), {}}));
    buffers_.back()->events.reserve(4096);
    cache = {id_, buffers_.back().get()};
  }
  return *static_cast<thread_buffer*>(cache.buffer);
}

void trace_recorder::record(std::uint64_t step, int op, std::int64_t enqueued_ns,
                            std::int64_t start_ns, std::int64_t end_ns, bool dense_fallback) {
  thread_buffer& b = local_buffer();
  trace_event e{step, op, b.thread, enqueued_ns, start_ns, end_ns};
  e.dense_fallback = dense_fallback;
  b.events.push_back(e);
}

void trace_recorder::record_launched(std::uint64_t step, int op, std::int64_t enqueued_ns,
                                     std::int64_t start_ns, std::int64_t end_ns,
                                     std::int64_t launch_start_ns, std::int64_t launch_end_ns) {
  thread_buffer& b = local_buffer();
  b.events.push_back({step, op, b.thread, enqueued_ns, start_ns, end_ns, launch_start_ns, launch_end_ns});
}

std::vector<trace_event> trace_recorder::events() const {
  std::vector<trace_event> all;
  std::lock_guard<std::mutex> guard(registry_mutex_);
  for (const auto& b : buffers_) all.insert(all.end(), b->events.begin(), b->events.end());
  std::sort(all.begin(), all.end(),
            [](const trace_event& a, const trace_event& b) { return a.start_ns < b.start_ns; });
  return all;
}

} // namespace pe

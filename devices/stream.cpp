#include "devices/stream.hpp"

#include "devices/steady_clock.hpp"

namespace pe {

std::string to_string(stream_kind kind) {
  switch (kind) {
    case stream_kind::compute: return "compute";
    case stream_kind::communication: return "communication";
    case stream_kind::copy: return "copy";
  }
  return "?";
}

// Where the stream's thread runs the work itself (a CPU place, a device without a clock),
// the task's own run is its span.

void stream::enqueue_timed(task work, span_sink timed) {
  enqueue([work = std::move(work), timed = std::move(timed)] {
    const std::int64_t start = steady_ns();
    work();
    timed({start, steady_ns()});
  });
}

void stream::enqueue_always_timed(std::function<void(bool failed)> work, span_sink timed) {
  enqueue_always([work = std::move(work), timed = std::move(timed)](bool failed) {
    const std::int64_t start = steady_ns();
    work(failed);
    timed({start, steady_ns()});
  });
}

} // namespace pe

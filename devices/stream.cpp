#include "devices/stream.hpp"

#include <exception>

#include "devices/progress.hpp"

namespace pe {

std::string to_string(stream_kind kind) {
  switch (kind) {
    case stream_kind::compute: return "compute";
    case stream_kind::communication: return "communication";
    case stream_kind::copy: return "copy";
  }
  return "?";
}

stream::failure stream::caught_failure() {
  try {
    throw;
  } catch (const pe::error& e) { // qualified: error and error_kind name members here
    return {e.what(), e.kind()};
  } catch (const std::exception& e) {
    return {e.what(), pe::error_kind::ordinary};
  } catch (...) {
    return {"unknown exception", pe::error_kind::ordinary};
  }
}

void stream::enqueue_polled(polled_task work) {
  enqueue_always([work = std::move(work)](bool failed) {
    for (;;) {
      const std::uint64_t seen = progress_epoch();
      if (work(failed)) return;
      // Bounded: progress that comes from outside the notifying code (a timeout passing)
      // is still seen within a millisecond.
      wait_for_progress(seen, std::chrono::milliseconds(1));
    }
  });
}

std::optional<bool> stream::synchronize_for(std::chrono::milliseconds) {
  return synchronize();
}

void stream::enqueue_timed(task work, span_sink timed) {
  enqueue([work = std::move(work), timed = std::move(timed)] { run_timed_on_host(work, timed); });
}

void stream::enqueue_always_timed(std::function<void(bool failed)> work, span_sink timed) {
  enqueue_always([work = std::move(work), timed = std::move(timed)](bool failed) {
    run_timed_on_host([&] { work(failed); }, timed);
  });
}

} // namespace pe

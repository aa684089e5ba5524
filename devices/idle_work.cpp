#include "devices/idle_work.hpp"

#include <thread>
#include <utility>

#include "core/error.hpp"

namespace pe {

idle_work::idle_work(std::function<void(int piece)> run_piece, int pieces)
    : run_piece_(std::move(run_piece)), pieces_(pieces) {
  if (pieces < 0) throw error("idle_work: a negative number of pieces (" + std::to_string(pieces) + ")");
  if (pieces > 0 && !run_piece_) throw error("idle_work: pieces without a function to run them");
}

bool idle_work::run_one() noexcept {
  const int k = next_.fetch_add(1, std::memory_order_relaxed);
  if (k >= pieces_) return false;
  try {
    run_piece_(k);
  } catch (...) {
    std::lock_guard<std::mutex> guard(failure_mutex_);
    if (!failure_) failure_ = std::current_exception();
  }
  done_.fetch_add(1, std::memory_order_release); // publishes the piece's writes
  return true;
}

void idle_work::finish() {
  while (run_one()) {
  }
  // The pieces other threads took are short (a piece is a slice of a copy), and those
  // threads run them to the end whatever happens: the wait needs no other way out.
  while (done_.load(std::memory_order_acquire) < pieces_) std::this_thread::yield();
  std::lock_guard<std::mutex> guard(failure_mutex_);
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

} // namespace pe

#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>

namespace pe {

/// Host work cut into independent pieces, for threads that have nothing else to do: a CPU
/// place's device thread takes a piece whenever its streams have nothing ready
/// (device::offer_idle_work), and the thread that made the work finishes what is left.
///
/// Why: pe-actor-run copies its next batch while a step runs (parallel_executor::
/// run_meanwhile). Where the places take every core, that copy on the step's own thread
/// took a place's core at the step's start: traces of the MLP on 2 places of a 2-vCPU VM
/// had one place start 80 us late on every ~800 us step, and the other waiting for it at
/// the end. Pieces taken only by idle device threads fill the gaps a step already has
/// (a place waiting for an all-reduce) instead.
class idle_work {
 public:
  /// `run_piece(k)` for k = 0 .. pieces - 1, each once, on any thread, possibly at once.
  idle_work(std::function<void(int piece)> run_piece, int pieces);
  idle_work(const idle_work&) = delete;
  idle_work& operator=(const idle_work&) = delete;

  /// Runs one piece that no thread has taken; false when every piece is taken. A piece's
  /// exception is kept for finish(), never thrown here (a device thread calls this).
  bool run_one() noexcept;

  /// Whether a piece is left to take.
  bool left() const { return next_.load(std::memory_order_relaxed) < pieces_; }

  /// Runs every piece left, then waits (yielding) for those other threads are running,
  /// and rethrows the first exception a piece threw. Its pieces' writes are visible to the
  /// caller once it returns. Call once, from the thread that made the work.
  void finish();

 private:
  std::function<void(int)> run_piece_;
  int pieces_;
  std::atomic<int> next_{0};
  std::atomic<int> done_{0};
  std::mutex failure_mutex_;
  std::exception_ptr failure_; // guarded by failure_mutex_
};

} // namespace pe

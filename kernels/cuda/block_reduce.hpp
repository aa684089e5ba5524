#pragma once

// The thread and shared-memory index math of the block reductions (reductions, softmax
// lanes, Y@GRAD, accuracy): a block of `threads` threads (a power of two) reduces `count`
// terms; thread t first folds the terms t, t + threads, t + 2 threads, ... (strided_fold),
// stores its partial in shared[t], and the block halves the active range in log2(threads)
// tree steps (tree_step, with a barrier between steps on the GPU). block_reduce.cuh runs it on
// the GPU; simulate_block_reduce runs the same steps on the host, one (block, thread) at a
// time, for the host tests.

#include <cstdint>
#include <vector>

#include "kernels/cuda/host_device.hpp"

namespace pe::cuda {

/// Threads per block of every block-reducing kernel.
constexpr unsigned reduce_threads = 256;

/// Thread t's partial: init folded with term(r) for r = t, t + threads, ... below count.
template <class T, class Term, class Op>
PE_HOST_DEVICE T strided_fold(std::int64_t count, unsigned t, unsigned threads, T init,
                              Term term, Op op) {
  T acc = init;
  for (std::int64_t r = t; r < count; r += threads) acc = op(acc, term(r));
  return acc;
}

/// One tree step for thread t: the lower half [0, half) takes in the upper half.
template <class T, class Op>
PE_HOST_DEVICE void tree_step(T* shared, unsigned t, unsigned half, Op op) {
  if (t < half) shared[t] = op(shared[t], shared[t + half]);
}

/// The host's replay of a block's tree steps over the threads' partials (partials.size() =
/// threads), each step over all threads before the next, as the barrier orders them.
template <class T, class Op>
T simulate_tree(std::vector<T> shared, Op op) {
  const auto threads = static_cast<unsigned>(shared.size());
  for (unsigned half = threads / 2; half > 0; half /= 2)
    for (unsigned t = 0; t < threads; ++t) tree_step(shared.data(), t, half, op);
  return shared[0];
}

/// The host's replay of one block: every thread's strided_fold, then every tree step, each
/// step over all threads before the next (what the barrier guarantees on the GPU).
template <class T, class Term, class Op>
T simulate_block_reduce(std::int64_t count, unsigned threads, T init, Term term, Op op) {
  std::vector<T> shared(threads);
  for (unsigned t = 0; t < threads; ++t)
    shared[t] = strided_fold(count, t, threads, init, term, op);
  for (unsigned half = threads / 2; half > 0; half /= 2)
    for (unsigned t = 0; t < threads; ++t) tree_step(shared.data(), t, half, op);
  return shared[0];
}

struct plus_op {
  template <class T>
  PE_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
};

struct max_op {
  template <class T>
  PE_HOST_DEVICE T operator()(T a, T b) const { return a < b ? b : a; }
};

/// How many blocks a split reduction (grid_stride.cuh's reduce_blocks_split) gives each of
/// `outputs` reduced elements of `terms` terms: 1 (one block per element, reduce_blocks) when
/// the elements alone give the GPU enough blocks or each has few terms; else enough chunks
/// for about split_target_blocks blocks in all, none of fewer than split_min_terms terms.
/// (Batch norm's channels are few and long: 32 blocks of 50176 terms each on the CNN's first
/// layer left most of an H100's 132 multiprocessors idle, 0.3 ms a pass.)
constexpr std::int64_t split_target_blocks = 1024;
constexpr std::int64_t split_min_terms = 2048;
inline std::int64_t split_chunks(std::int64_t outputs, std::int64_t terms) {
  if (outputs <= 0 || outputs >= split_target_blocks / 4 || terms < 2 * split_min_terms) return 1;
  const std::int64_t by_blocks = (split_target_blocks + outputs - 1) / outputs;
  const std::int64_t by_terms = terms / split_min_terms;
  return by_blocks < by_terms ? by_blocks : by_terms;
}

/// The host's replay of a split reduction of one element j: chunk k's block runs the plan's
/// partial as virtual thread k * threads + t of chunks * threads (so the chunks share the
/// element's terms out between them as one wide block would), its tree gives the chunk's sum,
/// and the chunks' sums are added in chunk order (the finishing kernel's order).
template <class Plan>
double simulate_split_reduce(const Plan& plan, std::int64_t j, std::int64_t chunks, unsigned threads) {
  double total = 0;
  for (std::int64_t k = 0; k < chunks; ++k) {
    std::vector<double> shared(threads);
    for (unsigned t = 0; t < threads; ++t)
      shared[t] = plan.partial(j, static_cast<unsigned>(k) * threads + t, static_cast<unsigned>(chunks) * threads);
    total += simulate_tree(shared, plus_op{});
  }
  return total;
}

} // namespace pe::cuda

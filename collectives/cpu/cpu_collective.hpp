#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace pe {

/// The arithmetic of one collective across the CPU places of this process, performed in
/// place in the places' own buffers. Several variables may travel together (a fused
/// bucket); the work is cut into chunks of the variables' concatenation so that the ranks
/// share it (inproc_communicator: rank r does chunk r).
///
/// Every element is summed in place order (place 0 + place 1 + ...), whatever the chunking,
/// so results are bit-identical run to run and independent of the worker count.
struct cpu_collective {
  enum class kind {
    all_reduce, ///< every place gets the sum
    reduce,     ///< `root` gets the sum; the others keep their values
    broadcast,  ///< every place gets `root`'s values
  };

  kind what = kind::all_reduce;
  int root = 0;
  /// buffers[v][p]: variable v on place p; sizes[v]: its element count.
  std::vector<std::vector<float*>> buffers;
  std::vector<std::size_t> sizes;

  std::size_t total_elements() const;

  /// Performs chunk `k` of `parts` equal chunks (cut at 64-element boundaries, so
  /// workers never share a cache line). Chunks may run concurrently.
  void run_chunk(std::size_t k, std::size_t parts) const;

  /// All chunks, one after another.
  void run() const { run_chunk(0, 1); }
};

} // namespace pe

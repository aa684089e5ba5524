#pragma once

// Which cuDNN convolution algorithms a pass tries, in which order, and what happens when one
// cannot run. Plain C++ without cuDNN's types, so that the host tests check the order and the
// fallback (tests/conv_algorithms_test.cpp); conv_kernels.cu translates cuDNN's heuristic
// results into heuristic_result and runs the algorithms.
//
// As PyTorch's cuDNN convolutions do, an algorithm that cuDNN refuses at run time (not
// supported, execution failed) or whose workspace cannot be allocated gives way to the next
// candidate rather than failing the step. It then goes to the back of the list: later calls
// start with one that ran, and a workspace refused for a moment's lack of memory is tried
// again once the others have failed too.

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pe::cuda {

/// One result of cuDNN's heuristics for a convolution pass, in the terms the choice needs.
struct heuristic_result {
  enum class math { fma, default_math, tensor_op };
  int algo = 0;
  bool succeeded = false; ///< cuDNN reported CUDNN_STATUS_SUCCESS for it
  math math_type = math::fma;
  bool deterministic = false;
  bool sums_directly = false; ///< no FFT or Winograd transform (see conv_kernels.cu)
  std::size_t memory = 0;     ///< the workspace it needs, in bytes
};

/// The algorithms worth trying, best first: results that succeeded, sum directly, need at
/// most `workspace_limit` bytes and do not use tensor-op (TF32) math; deterministic ones
/// before non-deterministic ones (a step then repeats bit for bit), FMA math before default
/// math (the descriptor's FMA setting still rules out TF32 when it runs), and within each
/// tier cuDNN's order (fastest first). Each algorithm once.
inline std::vector<int> rank_algorithms(const std::vector<heuristic_result>& results,
                                        std::size_t workspace_limit) {
  std::vector<int> ranked;
  for (const bool deterministic : {true, false})
    for (const auto math : {heuristic_result::math::fma, heuristic_result::math::default_math})
      for (const heuristic_result& r : results) {
        const bool taken = std::find(ranked.begin(), ranked.end(), r.algo) != ranked.end();
        if (!taken && r.succeeded && r.math_type == math && r.deterministic == deterministic &&
            r.sums_directly && r.memory <= workspace_limit)
          ranked.push_back(r.algo);
      }
  return ranked;
}

/// An algorithm of one pass and the workspace it needs.
struct conv_algorithm {
  int algo = 0;
  std::size_t workspace = 0;
};

/// What trying one algorithm came to.
struct attempt {
  enum class kind {
    done,     ///< it ran
    unusable, ///< it cannot run here (refused, or no memory for its workspace): try the next
    fatal     ///< an error no other algorithm would avoid (a bad parameter, a lost device)
  };
  kind what = kind::done;
  std::string why; ///< for unusable and fatal: the error
};

/// The candidate algorithms of one convolution pass for one shape and device, best first,
/// shared by every call with that key (on any place's stream thread). An unusable candidate
/// goes last for every later call, so a step does not retry a refused algorithm, or empty the
/// memory cache again for a workspace that did not fit, before the ones that ran.
class algorithm_candidates {
 public:
  explicit algorithm_candidates(std::vector<conv_algorithm> best_first)
      : candidates_(std::move(best_first)) {}

  /// Tries the candidates in order with `try_one(const conv_algorithm&) -> attempt` until one
  /// is done. Returns nothing when one ran; otherwise the error: a fatal attempt's, or, when
  /// every candidate was unusable, each one's reason. The lock is not held while trying, so
  /// places running the same shape at once do not wait for each other.
  template <class Try>
  std::optional<std::string> run(Try&& try_one) {
    std::string reasons;
    for (const conv_algorithm& a : snapshot()) {
      const attempt result = try_one(a);
      if (result.what == attempt::kind::done) return std::nullopt;
      if (result.what == attempt::kind::fatal) return result.why;
      demote(a.algo);
      reasons += "; algorithm " + std::to_string(a.algo) + ": " + result.why;
    }
    if (reasons.empty()) return std::string("there is no candidate algorithm");
    return "every candidate algorithm failed" + reasons;
  }

  /// The candidates still in the running, best first.
  std::vector<conv_algorithm> snapshot() const {
    std::lock_guard lock(mutex_);
    return candidates_;
  }

 private:
  void demote(int algo) {
    std::lock_guard lock(mutex_);
    const auto it = std::find_if(candidates_.begin(), candidates_.end(),
                                 [&](const conv_algorithm& a) { return a.algo == algo; });
    if (it != candidates_.end()) std::rotate(it, it + 1, candidates_.end());
  }

  mutable std::mutex mutex_;
  std::vector<conv_algorithm> candidates_;
};

} // namespace pe::cuda

#pragma once

// The per-row plans of the loss and metric kernels (kernels/cpu/loss_kernels.cpp's
// arithmetic): softmax_with_cross_entropy (a block per row, as softmax_plan), the
// cross-entropy of probabilities (a thread per row), their grads (element or row maps),
// top_k (a thread per lane) and accuracy (one block).
//
// The CPU kernels fail on a hard label outside [0, classes) that is not ignore_index; the
// GPU ones cannot throw from the device without a host round trip, so they write NaN into
// that row's loss (and MatchX) instead, which --check-nan-inf and the non-finite-loss check
// report.

#include <cmath>
#include <cstdint>

#include "kernels/cuda/block_reduce.hpp"
#include "kernels/cuda/elementwise_functors.hpp"
#include "kernels/cuda/lanes.hpp"
#include "kernels/cuda/softmax_plans.hpp"

namespace pe::cuda {

PE_HOST_DEVICE inline float quiet_nan() { return __builtin_nanf(""); }

/// softmax_with_cross_entropy (use_softmax) over rows of `classes` logits: Softmax as
/// softmax_plan writes it, then Loss from the row's log softmax.
struct softmax_xent_plan {
  softmax_plan softmax; ///< lanes: rows (inner 1)
  const float* soft;    ///< soft labels [rows, classes], or null
  const std::int64_t* hard; ///< hard labels [rows], or null
  float* loss;
  std::int64_t ignore_index;

  /// Soft labels: thread t's part of -sum_j label_j * log_softmax_j.
  PE_HOST_DEVICE double loss_partial(std::int64_t row, unsigned t, unsigned threads, float max,
                                     double log_sum) const {
    const std::int64_t classes = softmax.l.n, first = row * classes;
    return strided_fold(
        classes, t, threads, 0.0,
        [&](std::int64_t j) {
          const double log_softmax = static_cast<double>(softmax.x[first + j] - max) - log_sum;
          return -static_cast<double>(soft[first + j]) * log_softmax;
        },
        plus_op{});
  }
  PE_HOST_DEVICE void finish_soft(std::int64_t row, double total) const {
    loss[row] = static_cast<float>(total);
  }
  /// Hard labels (one thread per row): -log_softmax of the label, 0 for ignore_index.
  PE_HOST_DEVICE void finish_hard(std::int64_t row, float max, double log_sum) const {
    const std::int64_t classes = softmax.l.n, y = hard[row];
    if (y == ignore_index) {
      loss[row] = 0.f;
    } else if (y < 0 || y >= classes) {
      loss[row] = quiet_nan();
    } else {
      const double log_softmax = static_cast<double>(softmax.x[row * classes + y] - max) - log_sum;
      loss[row] = static_cast<float>(-log_softmax);
    }
  }
};

/// Logits@GRAD[i] = (Softmax[i] - target) * Loss@GRAD[row]: the soft label or the one-hot
/// hard label as target; 0 in rows whose label is ignore_index.
struct softmax_xent_grad_map {
  const float* softmax;
  const float* soft;
  const std::int64_t* hard;
  const float* loss_grad;
  float* grad;
  std::int64_t classes;
  std::int64_t ignore_index;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t row = i / classes, j = i % classes;
    if (soft != nullptr) {
      grad[i] = softmax_xent_grad_fn{}(softmax[i], soft[i], loss_grad[row]);
      return;
    }
    const std::int64_t y = hard[row];
    grad[i] = y == ignore_index ? 0.f
                                : softmax_xent_grad_fn{}(softmax[i], j == y ? 1.f : 0.f, loss_grad[row]);
  }
};

/// Cross-entropy of probabilities, one row per op(row): Loss = -log X[Label] (hard; MatchX,
/// when bound, the probability) or -sum Label * log X (soft, in double).
struct probability_xent_map {
  const float* x;
  const float* soft;
  const std::int64_t* hard;
  float* loss;
  float* match; ///< null unless MatchX is wanted (hard labels only)
  std::int64_t classes;
  std::int64_t ignore_index;
  PE_HOST_DEVICE void operator()(std::int64_t row) const {
    const std::int64_t first = row * classes;
    if (soft != nullptr) {
      double total = 0;
      for (std::int64_t j = 0; j < classes; ++j)
        total += soft[first + j] * static_cast<double>(neg_log(x[first + j]));
      loss[row] = static_cast<float>(total);
      return;
    }
    const std::int64_t y = hard[row];
    float p = 0.f;
    if (y == ignore_index)
      loss[row] = 0.f;
    else if (y < 0 || y >= classes)
      loss[row] = p = quiet_nan();
    else
      loss[row] = neg_log(p = x[first + y]);
    if (match != nullptr) match[row] = p;
  }
};

/// Hard-label grad over probabilities, one row per op(row), into a zeroed X@GRAD:
/// -Loss@GRAD / p at the label, p = MatchX[row] or X[row, label].
struct hard_probability_grad_map {
  const float* x;     ///< X, read when match is null
  const float* match; ///< MatchX, or null
  const std::int64_t* hard;
  const float* loss_grad;
  float* grad;
  std::int64_t classes;
  std::int64_t ignore_index;
  PE_HOST_DEVICE void operator()(std::int64_t row) const {
    const std::int64_t y = hard[row];
    if (y == ignore_index || y < 0 || y >= classes) return;
    const float p = match != nullptr ? match[row] : x[row * classes + y];
    grad[row * classes + y] = -loss_grad[row] / p;
  }
};

/// Soft-label grad over probabilities: -Label[i] / X[i] * Loss@GRAD[row].
struct soft_probability_grad_map {
  const float* x;
  const float* soft;
  const float* loss_grad;
  float* grad;
  std::int64_t classes;
  PE_HOST_DEVICE void operator()(std::int64_t i) const {
    grad[i] = soft_probability_grad_fn{}(x[i], soft[i], loss_grad[i / classes]);
  }
};

/// The k best elements of each lane of X, best first, ties to the lower index (the CPU
/// kernel's partial_sort order), by insertion: one lane per op(lane).
struct top_k_map {
  const float* x;
  float* out;
  std::int64_t* indices;
  lane_layout l;
  std::int64_t k;
  bool largest;
  PE_HOST_DEVICE void operator()(std::int64_t lane) const {
    const std::int64_t from = l.first(lane), to = l.first(lane, k), step = l.stride();
    std::int64_t held = 0;
    for (std::int64_t i = 0; i < l.n; ++i) {
      const float v = x[from + i * step];
      // Earlier elements win ties, so only a strictly better value moves in.
      std::int64_t at = held;
      while (at > 0 && (largest ? v > out[to + (at - 1) * step] : v < out[to + (at - 1) * step]))
        --at;
      if (at >= k) continue;
      for (std::int64_t m = (held < k ? held : k - 1); m > at; --m) {
        out[to + m * step] = out[to + (m - 1) * step];
        indices[to + m * step] = indices[to + (m - 1) * step];
      }
      out[to + at * step] = v;
      indices[to + at * step] = i;
      if (held < k) ++held;
    }
  }
};

/// X@GRAD of top_k, one lane per op(lane): zero, then each picked element's Out@GRAD added
/// at its index (indices outside [0, n) are skipped).
struct top_k_grad_map {
  const std::int64_t* indices;
  const float* dout;
  float* grad;
  lane_layout l; ///< X's lanes
  std::int64_t k;
  PE_HOST_DEVICE void operator()(std::int64_t lane) const {
    const std::int64_t from = l.first(lane, k), to = l.first(lane), step = l.stride();
    for (std::int64_t i = 0; i < l.n; ++i) grad[to + i * step] = 0.f;
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t i = indices[from + j * step];
      if (i >= 0 && i < l.n) grad[to + i * step] += dout[from + j * step];
    }
  }
};

/// accuracy: one block counts the rows whose top-k Indices hold their Label.
struct accuracy_plan {
  const std::int64_t* indices;
  const std::int64_t* label;
  std::int64_t rows, k;
  float* accuracy;
  std::int32_t* correct;
  std::int32_t* total;

  PE_HOST_DEVICE std::int64_t partial(unsigned t, unsigned threads) const {
    return strided_fold(
        rows, t, threads, std::int64_t{0},
        [&](std::int64_t r) {
          for (std::int64_t j = 0; j < k; ++j)
            if (indices[r * k + j] == label[r]) return std::int64_t{1};
          return std::int64_t{0};
        },
        plus_op{});
  }
  PE_HOST_DEVICE void finish(std::int64_t count) const {
    const auto c = static_cast<std::int32_t>(count), n = static_cast<std::int32_t>(rows);
    accuracy[0] = n == 0 ? 0.f : static_cast<float>(c) / static_cast<float>(n);
    correct[0] = c;
    total[0] = n;
  }
};

} // namespace pe::cuda

#pragma once

// What the CPU kernels of the math group (math_kernels.cpp, gemm_kernels.cpp,
// activation_kernels.cpp, reduce_kernels.cpp) share with the elementwise, softmax and shape
// kernels: input checks, in-place safety, element maps and the broadcast / reduction
// traversal. Internal to kernels/cpu.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "kernels/kernel.hpp"

namespace pe {

/// The kernels of each math file; register_math_kernels calls them all.
void register_gemm_kernels(kernel_registry& r);       // mul, matmul_v2, matmul
void register_activation_kernels(kernel_registry& r); // the activations, scale
void register_reduce_kernels(kernel_registry& r);     // mean, reduce_mean, reduce_sum

/// Input `slot`[i], checked to be an initialised FP32 tensor (the math kernels compute in
/// FP32 only).
const tensor& fp32_input(const kernel_context& ctx, std::string_view slot, std::size_t i = 0);

/// Fails unless input `slot` has `dims` (a 0-D scalar [] counts as [1]), naming the slot
/// and both shapes.
/// The data of output `slot` resized to FP32 `dims`, or null when the op does not bind it.
inline float* fp32_output(kernel_context& ctx, std::string_view slot, const shape_t& dims) {
  if (!ctx.has_output(slot)) return nullptr;
  tensor& t = ctx.output(slot);
  t.resize(dtype::fp32, dims);
  return t.data<float>();
}

void expect_dims(const kernel_context& ctx, std::string_view slot, const tensor& t,
                 const shape_t& dims);

/// Whether writing `out` may clobber `in`: the same tensor object, or one over the same buffer.
inline bool aliases(const tensor& out, const tensor& in) {
  return &out == &in || (out.initialized() && out.raw() == in.raw());
}

/// Runs `compute(t)` on the tensor `out` must end up as. Kernels that read inputs after they
/// have begun writing (GEMM, reductions, broadcasts) cannot run in place, so when `out`
/// aliases one of `reads`, `compute` fills a fresh tensor that then replaces `out`.
template <class Fn>
void write_unaliased(tensor& out, std::initializer_list<const tensor*> reads, Fn&& compute) {
  if (std::none_of(reads.begin(), reads.end(),
                   [&](const tensor* in) { return aliases(out, *in); })) {
    compute(out);
    return;
  }
  tensor fresh;
  compute(fresh);
  out = std::move(fresh);
}

/// out[i] = f(in[i]). Correct in place: each element is read before it is written.
template <class F>
void map_unary(kernel_context& ctx, std::string_view in_slot, std::string_view out_slot, F f) {
  const tensor& in = fp32_input(ctx, in_slot);
  tensor& out = ctx.output(out_slot);
  out.resize(dtype::fp32, in.shape());
  const float* x = in.data<float>();
  float* y = out.data<float>();
  const std::int64_t n = in.numel();
  for (std::int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

/// out[i] = f(a[i], b[i]) over two inputs of equal dims; correct in place like map_unary.
template <class F>
void map_binary(kernel_context& ctx, std::string_view a_slot, std::string_view b_slot,
                std::string_view out_slot, F f) {
  const tensor& a = fp32_input(ctx, a_slot);
  const tensor& b = fp32_input(ctx, b_slot);
  expect_dims(ctx, b_slot, b, a.shape());
  tensor& out = ctx.output(out_slot);
  out.resize(dtype::fp32, a.shape());
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* z = out.data<float>();
  const std::int64_t n = a.numel();
  for (std::int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
}

/// A "full" dense tensor and a "small" one holding only the full tensor's kept axes (the
/// others are broadcast, or reduced): the geometry of reductions (full -> small) and of
/// broadcasts (small -> full) alike. Adjacent axes of the same kind are merged, so the
/// traversal visits long contiguous rows.
class broadcast_layout {
 public:
  /// `reduced[i]` marks full axis i as absent from the small tensor.
  broadcast_layout(const shape_t& full, const std::vector<bool>& reduced);

  std::int64_t full_numel() const { return full_numel_; }
  std::int64_t small_numel() const { return small_numel_; }

  /// Calls row(full_offset, small_offset, length, repeated) once per innermost run of the
  /// full tensor, in memory order. When `repeated`, the run's `length` full elements all map
  /// to small[small_offset]; otherwise full[full_offset + i] maps to small[small_offset + i].
  template <class Row>
  void for_each_row(Row&& row) const {
    if (full_numel_ == 0) return;
    const std::size_t outer = extents_.size() - 1;
    const std::int64_t length = extents_[outer];
    const bool repeated = small_strides_[outer] == 0;
    std::vector<std::int64_t> index(outer, 0);
    std::int64_t small_offset = 0;
    for (std::int64_t full_offset = 0; full_offset < full_numel_; full_offset += length) {
      row(full_offset, small_offset, length, repeated);
      for (std::size_t a = outer; a-- > 0;) { // odometer over the outer runs
        small_offset += small_strides_[a];
        if (++index[a] < extents_[a]) break;
        small_offset -= small_strides_[a] * extents_[a];
        index[a] = 0;
      }
    }
  }

  /// Calls f(full_index, small_index) for every element of the full tensor, in memory order.
  template <class F>
  void for_each_element(F&& f) const {
    for_each_row([&](std::int64_t full, std::int64_t small, std::int64_t n, bool repeated) {
      if (repeated)
        for (std::int64_t i = 0; i < n; ++i) f(full + i, small);
      else
        for (std::int64_t i = 0; i < n; ++i) f(full + i, small + i);
    });
  }

 private:
  std::vector<std::int64_t> extents_;       ///< merged runs, outermost first; never empty
  std::vector<std::int64_t> small_strides_; ///< 0 for reduced runs
  std::int64_t full_numel_ = 1;
  std::int64_t small_numel_ = 1;
};

/// small[j] = sum of term(i, j) over the full elements i mapping to small element j; a
/// contiguous run that maps to one element is summed in double, as it may be long (mean over
/// a whole tensor).
template <class Term>
void reduce_sum_of(const broadcast_layout& layout, Term&& term, float* small) {
  std::fill(small, small + layout.small_numel(), 0.f);
  layout.for_each_row([&](std::int64_t f, std::int64_t s, std::int64_t n, bool repeated) {
    if (repeated) {
      double total = 0;
      for (std::int64_t i = 0; i < n; ++i) total += term(f + i, s);
      small[s] += static_cast<float>(total);
    } else {
      for (std::int64_t i = 0; i < n; ++i) small[s + i] += term(f + i, s + i);
    }
  });
}

/// small = sum of the full elements mapping to each small element (reduce_sum_of).
void reduce_sum(const broadcast_layout& layout, const float* full, float* small);

/// full = scale * small, repeated over the reduced axes.
void broadcast_scaled(const broadcast_layout& layout, const float* small, float scale, float* full);

} // namespace pe

// CPU kernels of the math group: the helpers every math kernel shares and sum. GEMM ops,
// activations, reductions and the broadcasting binary ops live in their own files.
#include "kernels/cpu/math_kernels.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/math_ops.hpp"

namespace pe {

// --- shared helpers --------------------------------------------------------------------

const tensor& fp32_input(const kernel_context& ctx, std::string_view slot, std::size_t i) {
  const tensor& t = ctx.input(slot, i);
  const std::string name = std::string(slot) + (i > 0 ? "[" + std::to_string(i) + "]" : "");
  if (!t.initialized()) ctx.fail("input " + name + " is uninitialised");
  if (t.type() != dtype::fp32) ctx.fail(name + " must be FP32, got " + to_string(t.type()));
  return t;
}

void expect_dims(const kernel_context& ctx, std::string_view slot, const tensor& t,
                 const shape_t& dims) {
  // Paddle 2.x writes scalars as 0-D ([]) where 1.x wrote [1]: the same one value.
  auto scalar = [](const shape_t& d) { return d.size() <= 1 && numel_of(d) == 1; };
  if (t.shape() != dims && !(scalar(t.shape()) && scalar(dims)))
    ctx.fail(std::string(slot) + " has dims " + to_string(t.shape()) + ", expected " +
             to_string(dims));
}

broadcast_layout::broadcast_layout(const shape_t& full, const std::vector<bool>& reduced) {
  std::vector<bool> run_reduced;
  for (std::size_t i = 0; i < full.size(); ++i) {
    full_numel_ *= full[i];
    if (full[i] == 1) continue; // belongs to neither kind: merging across it is free
    if (!extents_.empty() && run_reduced.back() == reduced[i]) {
      extents_.back() *= full[i];
    } else {
      extents_.push_back(full[i]);
      run_reduced.push_back(reduced[i]);
    }
  }
  if (extents_.empty()) {
    extents_.push_back(1);
    run_reduced.push_back(false);
  }
  small_strides_.resize(extents_.size());
  for (std::size_t a = extents_.size(); a-- > 0;) {
    small_strides_[a] = run_reduced[a] ? 0 : small_numel_;
    if (!run_reduced[a]) small_numel_ *= extents_[a];
  }
}

void reduce_sum(const broadcast_layout& layout, const float* full, float* small) {
  reduce_sum_of(layout, [full](std::int64_t i, std::int64_t) { return full[i]; }, small);
}

void broadcast_scaled(const broadcast_layout& layout, const float* small, float scale,
                      float* full) {
  layout.for_each_row([&](std::int64_t f, std::int64_t s, std::int64_t n, bool repeated) {
    if (repeated)
      std::fill(full + f, full + f + n, scale * small[s]);
    else
      for (std::int64_t i = 0; i < n; ++i) full[f + i] = scale * small[s + i];
  });
}

namespace {

// --- sum -------------------------------------------------------------------------------

/// Out = X[0] + X[1] + ... (sum_op: in place when Out is one of the inputs).
void sum(kernel_context& ctx) {
  sum_op(ctx, fp32_input, [](tensor& into, const std::vector<const tensor*>& inputs, std::size_t start) {
    const shape_t dims = inputs[0]->shape();
    const std::int64_t n = numel_of(dims);
    into.resize(dtype::fp32, dims);
    float* os = into.data<float>();
    if (start == inputs.size()) {
      std::memcpy(os, inputs[0]->data<float>(), static_cast<std::size_t>(n) * sizeof(float));
      start = 0;
    }
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (k == start) continue;
      const float* xs = inputs[k]->data<float>();
      for (std::int64_t i = 0; i < n; ++i) os[i] += xs[i];
    }
  });
}

} // namespace

void register_math_kernels(kernel_registry& r) {
  r.add("sum", place::kind::cpu, sum);
  register_gemm_kernels(r);
  register_activation_kernels(r);
  register_reduce_kernels(r);
}

} // namespace pe

// CPU kernels of the math group: the helpers every math kernel shares, elementwise_add and
// sum. GEMM ops, activations and reductions live in their own files.
#include "devices/cpu/math_kernels.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "devices/cpu/cpu_kernels.hpp"
#include "devices/math_shapes.hpp"

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
  std::fill(small, small + layout.small_numel(), 0.f);
  layout.for_each_row([&](std::int64_t f, std::int64_t s, std::int64_t n, bool repeated) {
    if (repeated) {
      double total = 0;
      for (std::int64_t i = 0; i < n; ++i) total += full[f + i];
      small[s] += static_cast<float>(total);
    } else {
      for (std::int64_t i = 0; i < n; ++i) small[s + i] += full[f + i];
    }
  });
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

// --- elementwise_add -------------------------------------------------------------------

/// X's dims with Y's broadcast axes marked: the layout of X (full) against Y (small).
broadcast_layout add_layout(const kernel_context& ctx, const tensor& x, const tensor& y) {
  const auto span =
      infer_broadcast(ctx, x.shape(), y.shape(), ctx.attrs().get<std::int32_t>("axis"));
  std::vector<bool> repeated(x.rank(), true);
  std::fill(repeated.begin() + static_cast<std::ptrdiff_t>(span.begin),
            repeated.begin() + static_cast<std::ptrdiff_t>(span.end), false);
  return {x.shape(), repeated};
}

/// Out = X + Y, Y broadcast. In place on X is fine (each element is read, then written);
/// Out aliasing Y is not, as Y is re-read across rows.
void elementwise_add(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& y = fp32_input(ctx, "Y");
  const broadcast_layout layout = add_layout(ctx, x, y);
  write_unaliased(ctx.output("Out"), {&y}, [&](tensor& out) {
    out.resize(dtype::fp32, x.shape());
    const float* xs = x.data<float>();
    const float* ys = y.data<float>();
    float* os = out.data<float>();
    layout.for_each_row([&](std::int64_t f, std::int64_t s, std::int64_t n, bool repeated) {
      if (repeated) {
        const float v = ys[s];
        for (std::int64_t i = 0; i < n; ++i) os[f + i] = xs[f + i] + v;
      } else {
        for (std::int64_t i = 0; i < n; ++i) os[f + i] = xs[f + i] + ys[s + i];
      }
    });
  });
}

/// X@GRAD = Out@GRAD; Y@GRAD = Out@GRAD summed over Y's broadcast axes. Each is computed
/// only when bound.
void elementwise_add_grad(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& y = fp32_input(ctx, "Y");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, x.shape());
  const broadcast_layout layout = add_layout(ctx, x, y);
  if (ctx.has_output("Y@GRAD"))
    write_unaliased(ctx.output("Y@GRAD"), {&dout}, [&](tensor& dy) {
      dy.resize(dtype::fp32, y.shape());
      reduce_sum(layout, dout.data<float>(), dy.data<float>());
    });
  if (ctx.has_output("X@GRAD")) ctx.output("X@GRAD").copy_from(dout);
}

// --- sum -------------------------------------------------------------------------------

/// Out = X[0] + X[1] + ... In place when Out is one of the inputs (how Paddle accumulates
/// gradients): the sum starts from that input's buffer and adds the others to it.
void sum(kernel_context& ctx) {
  const std::size_t count = ctx.input_count("X");
  if (count == 0) ctx.fail("X binds no variables");
  std::vector<const tensor*> inputs;
  for (std::size_t i = 0; i < count; ++i) {
    inputs.push_back(&fp32_input(ctx, "X", i));
    expect_dims(ctx, "X[" + std::to_string(i) + "]", *inputs.back(), inputs[0]->shape());
  }
  const shape_t dims = inputs[0]->shape();
  const std::int64_t n = numel_of(dims);
  // `start` is the input already held by `into` (count: none, so X[0] is copied in first).
  auto accumulate = [&](tensor& into, std::size_t start) {
    into.resize(dtype::fp32, dims);
    float* os = into.data<float>();
    if (start == count) {
      std::memcpy(os, inputs[0]->data<float>(), static_cast<std::size_t>(n) * sizeof(float));
      start = 0;
    }
    for (std::size_t k = 0; k < count; ++k) {
      if (k == start) continue;
      const float* xs = inputs[k]->data<float>();
      for (std::int64_t i = 0; i < n; ++i) os[i] += xs[i];
    }
  };
  // Out may be one input object (accumulate into it); any other overlap with the inputs
  // (Out bound twice, or sharing a buffer) would change inputs not yet added.
  tensor& out = ctx.output("Out");
  std::size_t base = count;
  bool clobbers = false;
  for (std::size_t k = 0; k < count; ++k) {
    if (&out == inputs[k] && base == count)
      base = k;
    else if (aliases(out, *inputs[k]))
      clobbers = true;
  }
  if (!clobbers) {
    accumulate(out, base);
    return;
  }
  tensor fresh;
  accumulate(fresh, count);
  out = std::move(fresh);
}

} // namespace

void register_math_kernels(kernel_registry& r) {
  r.add("elementwise_add", place::kind::cpu, elementwise_add);
  r.add("elementwise_add_grad", place::kind::cpu, elementwise_add_grad);
  r.add("sum", place::kind::cpu, sum);
  register_gemm_kernels(r);
  register_activation_kernels(r);
  register_reduce_kernels(r);
}

} // namespace pe

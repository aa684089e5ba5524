// CPU kernels of pool2d (max, avg) and pool2d_grad through oneDNN's pooling. The tensors
// are plain NCHW; the primitives run on the channel-blocked layout (dnnl_blocked), where
// oneDNN has jit kernels, and the kernels reorder into and out of it. The geometry is
// kernels/window_shapes.hpp's, the rule shape inference applies.
//
// Paddle's avg pooling with exclusive = false divides each window's sum by the window
// clipped to [-pad_begin, in + pad_begin) (its CPU kernel clips the end at the input plus
// the *begin* padding), while oneDNN's include-padding average always divides by the full
// kernel. They differ only for windows that run past in + pad_begin (ceil_mode, a larger end
// padding); there Out is oneDNN's times kernel / clipped size, a factor per output row and
// per output column, and the grad scales Out@GRAD by the same factor before oneDNN's backward.
//
// Max pooling's grad is no oneDNN primitive: oneDNN's backward needs the forward's workspace
// (where each maximum was), which Paddle's pool2d does not output, and running the forward
// again costs more than the backward itself. It is Paddle's own rule instead, on the Out the
// grad op reads: each window's gradient goes to its first element (row-major) equal to Out.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/blas.hpp"
#include "kernels/cpu/dnnl_cache.hpp"
#include "kernels/cpu/dnnl_context.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/window_shapes.hpp"

namespace pe {

namespace {

/// What oneDNN needs to describe one pooling.
struct pool_setup {
  pool_geometry geometry;
  dnnl::algorithm algorithm;
  dnnl::memory::desc src, dst;
  dnnl::memory::dims strides, kernel, pad_l, pad_r;
};

pool_setup setup_of(const kernel_context& ctx, const tensor& x) {
  const pool_geometry g = infer_pool(ctx, x.shape(), ctx.attrs());
  const auto& [h, w] = g.axes;
  return {.geometry = g,
          .algorithm = g.max         ? dnnl::algorithm::pooling_max
                       : g.exclusive ? dnnl::algorithm::pooling_avg_exclude_padding
                                     : dnnl::algorithm::pooling_avg_include_padding,
          .src = dnnl_plain_desc(x.shape()),
          .dst = dnnl_plain_desc(g.out),
          .strides = {h.stride, w.stride},
          .kernel = {h.kernel, w.kernel},
          .pad_l = {h.pad_begin, w.pad_begin},
          .pad_r = {h.exact_pad_end(), w.exact_pad_end()}};
}

dnnl::pooling_forward::primitive_desc forward_pd(const pool_setup& s, dnnl::prop_kind kind) {
  return {{kind, s.algorithm, dnnl_blocked(s.src), dnnl_any(s.dst), s.strides, s.kernel, s.pad_l,
           s.pad_r},
          dnnl_engine()};
}

/// The thread's cached pooling primitive of `Primitive` (forward for inference, or backward
/// with a training forward as its hint) for pooling `s`.
template <class Primitive>
dnnl_primitive_entry<Primitive> cached_pool(const pool_setup& s) {
  constexpr bool forward = std::is_same_v<Primitive, dnnl::pooling_forward>;
  dnnl_key key(forward ? 'P' : 'Q');
  key.add(s.src).add(s.dst).add(static_cast<std::int64_t>(s.algorithm)).add(s.strides).add(s.kernel)
      .add(s.pad_l).add(s.pad_r);
  return dnnl_cached<dnnl_primitive_entry<Primitive>>(std::move(key), [&] {
    typename Primitive::primitive_desc pd;
    if constexpr (forward)
      pd = forward_pd(s, dnnl::prop_kind::forward_inference);
    else
      pd = {{s.algorithm, dnnl_blocked(s.src), dnnl_any(s.dst), s.strides, s.kernel, s.pad_l, s.pad_r},
            dnnl_engine(),
            forward_pd(s, dnnl::prop_kind::forward_training)};
    return dnnl_primitive_entry<Primitive>{pd, Primitive(pd)};
  });
}

/// Paddle's factor (see the file comment) for each output position along one axis.
std::vector<float> divisor_factors(const window_axis& a) {
  std::vector<float> f(static_cast<std::size_t>(a.out), 1.f);
  for (std::int64_t o = 0; o < a.out; ++o) {
    const std::int64_t start = o * a.stride - a.pad_begin;
    const std::int64_t clipped = std::min(start + a.kernel, a.in + a.pad_begin) - start;
    if (clipped > 0) f[static_cast<std::size_t>(o)] = static_cast<float>(a.kernel) / clipped;
  }
  return f;
}

/// Paddle's factors along height and width; empty when they are all 1 (the usual case).
struct divisor_fix {
  std::vector<float> rows, cols;

  bool empty() const { return rows.empty(); }

  /// Multiplies `t`, of the pooled dims [N, C, rows, cols], by the factors in place.
  void apply(const shape_t& out, float* t) const {
    std::int64_t i = 0;
    for (std::int64_t plane = 0; plane < out[0] * out[1]; ++plane)
      for (float row : rows)
        for (float col : cols) t[i++] *= row * col;
  }
};

divisor_fix paddle_divisor(const pool_setup& s) {
  if (s.geometry.max || s.geometry.exclusive) return {};
  divisor_fix fix{divisor_factors(s.geometry.axes[0]), divisor_factors(s.geometry.axes[1])};
  const auto is_one = [](float f) { return f == 1.f; };
  if (std::all_of(fix.rows.begin(), fix.rows.end(), is_one) &&
      std::all_of(fix.cols.begin(), fix.cols.end(), is_one))
    return {};
  return fix;
}

void pool_forward(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  with_dnnl(ctx, [&] {
    const pool_setup s = setup_of(ctx, x);
    write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
      out.resize(dtype::fp32, s.geometry.out);
      const auto [pd, primitive] = cached_pool<dnnl::pooling_forward>(s);
      const dnnl::memory plain_dst = dnnl_memory(s.dst, out);
      const dnnl::memory dst = dnnl_result(plain_dst, pd.dst_desc());
      dnnl_run(primitive,
               {{DNNL_ARG_SRC, dnnl_reordered(dnnl_memory(s.src, x), pd.src_desc())},
                {DNNL_ARG_DST, dst}});
      dnnl_store(dst, plain_dst);
      if (const divisor_fix fix = paddle_divisor(s); !fix.empty())
        fix.apply(s.geometry.out, out.data<float>());
    });
  });
}

/// The window of output `o` along axis `a`, clipped to the input: [begin, end).
std::pair<std::int64_t, std::int64_t> window_of(const window_axis& a, std::int64_t o) {
  const std::int64_t start = o * a.stride - a.pad_begin;
  return {std::max<std::int64_t>(start, 0), std::min(start + a.kernel, a.in)};
}

/// X@GRAD of max pooling by Paddle's rule (see the file comment), one (n, c) plane per
/// OpenMP iteration, on as many threads as the oneDNN kernels use.
void max_pool_backward(const pool_geometry& g, const float* x, const float* out,
                       const float* dout, float* dx) {
  // Plain references, not structured bindings: OpenMP regions and lambdas cannot capture
  // those before clang 16 (the fuzz build compiles this file with clang).
  const window_axis& h = g.axes[0];
  const window_axis& w = g.axes[1];
  const std::int64_t planes = g.out[0] * g.out[1], in_plane = h.in * w.in;
  const std::int64_t out_plane = h.out * w.out;
  std::fill(dx, dx + planes * in_plane, 0.f);
#pragma omp parallel for num_threads(blas_threads())
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* xp = x + p * in_plane;
    float* dxp = dx + p * in_plane;
    for (std::int64_t oh = 0; oh < h.out; ++oh) {
      const std::pair<std::int64_t, std::int64_t> h_window = window_of(h, oh);
      const std::int64_t h_begin = h_window.first, h_end = h_window.second;
      for (std::int64_t ow = 0; ow < w.out; ++ow) {
        const std::pair<std::int64_t, std::int64_t> w_window = window_of(w, ow);
        const std::int64_t w_begin = w_window.first, w_end = w_window.second;
        const std::int64_t o = p * out_plane + oh * w.out + ow;
        const auto first_max = [&, max = out[o]]() -> std::int64_t {
          for (std::int64_t ih = h_begin; ih < h_end; ++ih)
            for (std::int64_t iw = w_begin; iw < w_end; ++iw)
              if (xp[ih * w.in + iw] == max) return ih * w.in + iw;
          return -1;
        }();
        if (first_max >= 0) dxp[first_max] += dout[o];
      }
    }
  }
}

/// Whether max_pool_backward_2x2 applies: 2 x 2 windows at stride 2 without padding that
/// tile the input exactly (LeNet's pools, the built-in CNN's).
bool tiles_by_2x2(const pool_geometry& g) {
  return std::all_of(g.axes.begin(), g.axes.end(), [](const window_axis& a) {
    return a.kernel == 2 && a.stride == 2 && a.pad_begin == 0 && a.in == 2 * a.out;
  });
}

/// max_pool_backward where tiles_by_2x2 holds: every input element is in one window, so
/// each is written once, without the fill and the search loop: branch-free selects of the
/// window's first element equal to Out (the same rule), which the compiler vectorises. Why:
/// the general loop was 10% of the built-in CNN's step on 1 place (perf, batch 64), its
/// comparisons mispredicted branches.
void max_pool_backward_2x2(const pool_geometry& g, const float* x, const float* out,
                           const float* dout, float* dx) {
  const std::int64_t planes = g.out[0] * g.out[1];
  const std::int64_t rows = g.axes[0].out, cols = g.axes[1].out, in_cols = g.axes[1].in;
  const std::int64_t in_plane = g.axes[0].in * in_cols, out_plane = rows * cols;
#pragma omp parallel for num_threads(blas_threads())
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* __restrict top = x + p * in_plane + 2 * r * in_cols;
      const float* __restrict bottom = top + in_cols;
      float* __restrict dtop = dx + p * in_plane + 2 * r * in_cols;
      float* __restrict dbottom = dtop + in_cols;
      const float* __restrict max = out + p * out_plane + r * cols;
      const float* __restrict grad = dout + p * out_plane + r * cols;
      for (std::int64_t c = 0; c < cols; ++c) {
        const float m = max[c], d = grad[c];
        // Bitwise, not &&: no branch per comparison.
        const bool first = top[2 * c] == m;
        const bool second = (top[2 * c + 1] == m) & !first;
        const bool third = (bottom[2 * c] == m) & !(first | second);
        const bool fourth = (bottom[2 * c + 1] == m) & !(first | second | third);
        dtop[2 * c] = first ? d : 0.f;
        dtop[2 * c + 1] = second ? d : 0.f;
        dbottom[2 * c] = third ? d : 0.f;
        dbottom[2 * c + 1] = fourth ? d : 0.f;
      }
    }
}

/// X@GRAD from Out@GRAD: max pooling by Paddle's rule on Out, avg through oneDNN's backward.
void pool_backward(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  with_dnnl(ctx, [&] {
    const pool_setup s = setup_of(ctx, x);
    expect_dims(ctx, "Out@GRAD", dout, s.geometry.out);
    if (s.geometry.max) {
      const tensor& out = fp32_input(ctx, "Out");
      expect_dims(ctx, "Out", out, s.geometry.out);
      write_unaliased(ctx.output("X@GRAD"), {&x, &out, &dout}, [&](tensor& dx) {
        dx.resize(dtype::fp32, x.shape());
        const auto backward = tiles_by_2x2(s.geometry) ? max_pool_backward_2x2 : max_pool_backward;
        backward(s.geometry, x.data<float>(), out.data<float>(), dout.data<float>(), dx.data<float>());
      });
      return;
    }
    tensor scaled;
    if (const divisor_fix fix = paddle_divisor(s); !fix.empty()) {
      scaled = dout.clone();
      fix.apply(s.geometry.out, scaled.data<float>());
    }
    const tensor& diff_dst = scaled.initialized() ? scaled : dout;
    write_unaliased(ctx.output("X@GRAD"), {&x, &dout}, [&](tensor& dx) {
      dx.resize(dtype::fp32, x.shape());
      const auto [pd, primitive] = cached_pool<dnnl::pooling_backward>(s);
      const dnnl::memory plain_dx = dnnl_memory(s.src, dx);
      const dnnl::memory diff_src = dnnl_result(plain_dx, pd.diff_src_desc());
      dnnl_run(primitive,
               {{DNNL_ARG_DIFF_DST,
                 dnnl_reordered(dnnl_memory(s.dst, diff_dst), pd.diff_dst_desc())},
                {DNNL_ARG_DIFF_SRC, diff_src}});
      dnnl_store(diff_src, plain_dx);
    });
  });
}

} // namespace

void register_dnnl_pool_kernels(kernel_registry& r) {
  r.add("pool2d", place::kind::cpu, pool_forward);
  r.add("pool2d_grad", place::kind::cpu, pool_backward);
}

} // namespace pe

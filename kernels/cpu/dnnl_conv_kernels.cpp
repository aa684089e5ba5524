// CPU kernels of conv2d and depthwise_conv2d (one kernel: depthwise is groups == channels)
// and of their grads, through oneDNN's direct convolution. The tensors are plain NCHW /
// (G)OIHW; the primitives pick their own layouts (format_tag::any: on AVX2 the jit kernels on
// nChw8c / OIhw8i8o, two to three times faster than gemm on the plain ones) and the kernels
// reorder into and out of them. The geometry is kernels/window_shapes.hpp's, the rule shape
// inference applies.
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/cpu/dnnl_cache.hpp"
#include "kernels/cpu/dnnl_context.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/window_shapes.hpp"

namespace pe {

namespace {

/// What oneDNN needs to describe one convolution.
struct conv_setup {
  conv_geometry geometry;
  dnnl::memory::desc src, weights, dst;
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
};

conv_setup setup_of(const kernel_context& ctx, const tensor& input, const tensor& filter) {
  conv_geometry g = infer_conv(ctx, input.shape(), filter.shape(), ctx.attrs());
  const shape_t& f = filter.shape();
  // Grouped weights are [G, M / G, C / G, kh, kw]: the same buffer as Filter's [M, C / G, kh, kw].
  const shape_t weights = g.groups == 1 ? f : shape_t{g.groups, f[0] / g.groups, f[1], f[2], f[3]};
  const auto& [h, w] = g.axes;
  conv_setup s{.geometry = g,
               .src = dnnl_plain_desc(input.shape()),
               .weights = dnnl_plain_desc(weights),
               .dst = dnnl_plain_desc(g.out),
               .strides = {h.stride, w.stride},
               .dilates = {h.dilation - 1, w.dilation - 1},
               .pad_l = {h.pad_begin, w.pad_begin},
               .pad_r = {h.exact_pad_end(), w.exact_pad_end()}};
  return s;
}

dnnl::convolution_forward::primitive_desc forward_pd(const conv_setup& s) {
  return {{dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
           dnnl_any(s.src), dnnl_any(s.weights), dnnl_any(s.dst), s.strides, s.dilates, s.pad_l,
           s.pad_r},
          dnnl_engine()};
}

/// The descriptor of a backward convolution, every layout left to oneDNN.
template <class Desc>
Desc backward_desc(const conv_setup& s) {
  return {dnnl::algorithm::convolution_direct, dnnl_any(s.src), dnnl_any(s.weights),
          dnnl_any(s.dst), s.strides, s.dilates, s.pad_l, s.pad_r};
}

/// The thread's cached primitive of `kind` ('F' forward, 'D' backward data, 'W' backward
/// weights) for convolution `s`.
template <class Primitive>
dnnl_primitive_entry<Primitive> cached_conv(char kind, const conv_setup& s) {
  dnnl_key key(kind);
  key.add(s.src).add(s.weights).add(s.dst).add(s.strides).add(s.dilates).add(s.pad_l).add(s.pad_r);
  return dnnl_cached<dnnl_primitive_entry<Primitive>>(std::move(key), [&] {
    typename Primitive::primitive_desc pd;
    if constexpr (std::is_same_v<Primitive, dnnl::convolution_forward>)
      pd = forward_pd(s);
    else
      pd = {backward_desc<typename Primitive::desc>(s), dnnl_engine(), forward_pd(s)};
    return dnnl_primitive_entry<Primitive>{pd, Primitive(pd)};
  });
}

/// Output = Input (*) Filter.
void conv_forward(kernel_context& ctx) {
  const tensor& input = fp32_input(ctx, "Input");
  const tensor& filter = fp32_input(ctx, "Filter");
  with_dnnl(ctx, [&] {
    const conv_setup s = setup_of(ctx, input, filter);
    write_unaliased(ctx.output("Output"), {&input, &filter}, [&](tensor& out) {
      out.resize(dtype::fp32, s.geometry.out);
      const auto [pd, primitive] = cached_conv<dnnl::convolution_forward>('F', s);
      const dnnl::memory plain_dst = dnnl_memory(s.dst, out);
      const dnnl::memory dst = dnnl_result(plain_dst, pd.dst_desc());
      dnnl_run(primitive,
               {{DNNL_ARG_SRC, dnnl_reordered(dnnl_memory(s.src, input), pd.src_desc())},
                {DNNL_ARG_WEIGHTS,
                 dnnl_reordered(dnnl_memory(s.weights, filter), pd.weights_desc())},
                {DNNL_ARG_DST, dst}});
      dnnl_store(dst, plain_dst);
    });
  });
}

/// Input@GRAD and Filter@GRAD from Output@GRAD; each only when bound (the first conv of a
/// network wants no gradient of the image).
void conv_backward(kernel_context& ctx) {
  const tensor& input = fp32_input(ctx, "Input");
  const tensor& filter = fp32_input(ctx, "Filter");
  const tensor& dout = fp32_input(ctx, "Output@GRAD");
  with_dnnl(ctx, [&] {
    const conv_setup s = setup_of(ctx, input, filter);
    expect_dims(ctx, "Output@GRAD", dout, s.geometry.out);
    // Output@GRAD in the layout each primitive wants, reordered once when both want the same.
    const dnnl::memory plain_dout = dnnl_memory(s.dst, dout);
    dnnl::memory reordered_dout = plain_dout;
    const auto diff_dst = [&](const dnnl::memory::desc& md) {
      if (reordered_dout.get_desc() != md) reordered_dout = dnnl_reordered(plain_dout, md);
      return reordered_dout;
    };
    if (ctx.has_output("Input@GRAD"))
      write_unaliased(ctx.output("Input@GRAD"), {&dout, &filter}, [&](tensor& dx) {
        dx.resize(dtype::fp32, input.shape());
        const auto [pd, primitive] = cached_conv<dnnl::convolution_backward_data>('D', s);
        const dnnl::memory plain_dx = dnnl_memory(s.src, dx);
        const dnnl::memory diff_src = dnnl_result(plain_dx, pd.diff_src_desc());
        dnnl_run(primitive,
                 {{DNNL_ARG_DIFF_DST, diff_dst(pd.diff_dst_desc())},
                  {DNNL_ARG_WEIGHTS,
                   dnnl_reordered(dnnl_memory(s.weights, filter), pd.weights_desc())},
                  {DNNL_ARG_DIFF_SRC, diff_src}});
        dnnl_store(diff_src, plain_dx);
      });
    if (ctx.has_output("Filter@GRAD"))
      write_unaliased(ctx.output("Filter@GRAD"), {&dout, &input}, [&](tensor& dw) {
        dw.resize(dtype::fp32, filter.shape());
        const auto [pd, primitive] = cached_conv<dnnl::convolution_backward_weights>('W', s);
        const dnnl::memory plain_dw = dnnl_memory(s.weights, dw);
        const dnnl::memory diff_weights = dnnl_result(plain_dw, pd.diff_weights_desc());
        dnnl_run(primitive,
                 {{DNNL_ARG_SRC, dnnl_reordered(dnnl_memory(s.src, input), pd.src_desc())},
                  {DNNL_ARG_DIFF_DST, diff_dst(pd.diff_dst_desc())},
                  {DNNL_ARG_DIFF_WEIGHTS, diff_weights}});
        dnnl_store(diff_weights, plain_dw);
      });
  });
}

} // namespace

void register_dnnl_conv_kernels(kernel_registry& r) {
  for (const std::string type : {"conv2d", "depthwise_conv2d"}) {
    r.add(type, place::kind::cpu, conv_forward);
    r.add(type + "_grad", place::kind::cpu, conv_backward);
  }
}

} // namespace pe

// CPU kernels of gelu and gelu_grad through oneDNN's element-wise primitives (eltwise_gelu_erf,
// and eltwise_gelu_tanh for `approximate`), which oneDNN jit-compiles with vectorised erf and
// tanh. Why not a loop over std::erf: glibc's erff is a scalar call of ~20 ns per element,
// which made the two gelus of the BERT-style encoder fixture and their grads the largest
// share of its CPU step (trace: 322 of ~1760 us). X is seen as one flat vector (element-wise).
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/cpu/dnnl_cache.hpp"
#include "kernels/cpu/dnnl_context.hpp"
#include "kernels/cpu/math_kernels.hpp"

namespace pe {

namespace {

dnnl::algorithm gelu_algorithm(const kernel_context& ctx) {
  return ctx.attrs().get<bool>("approximate") ? dnnl::algorithm::eltwise_gelu_tanh
                                               : dnnl::algorithm::eltwise_gelu_erf;
}

dnnl::eltwise_forward::primitive_desc gelu_forward_pd(const kernel_context& ctx, const dnnl::memory::desc& md) {
  return {{dnnl::prop_kind::forward_training, gelu_algorithm(ctx), md, 0.f, 0.f}, dnnl_engine()};
}

/// The thread's cached gelu primitive of `Primitive` (forward, or backward with the forward
/// as its hint) over `numel` elements.
template <class Primitive>
Primitive cached_gelu(const kernel_context& ctx, std::int64_t numel) {
  constexpr bool forward = std::is_same_v<Primitive, dnnl::eltwise_forward>;
  const dnnl::algorithm algorithm = gelu_algorithm(ctx);
  dnnl_key key(forward ? 'G' : 'H');
  key.add(numel).add(static_cast<std::int64_t>(algorithm));
  return dnnl_cached<Primitive>(std::move(key), [&] {
    const dnnl::memory::desc md = dnnl_plain_desc({numel});
    if constexpr (forward)
      return Primitive(gelu_forward_pd(ctx, md));
    else
      return Primitive(dnnl::eltwise_backward::primitive_desc({algorithm, md, md, 0.f, 0.f}, dnnl_engine(),
                                                              gelu_forward_pd(ctx, md)));
  });
}

/// Out = gelu(X); in place on X is fine.
void gelu(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  tensor& out = ctx.output("Out");
  out.resize(dtype::fp32, x.shape());
  if (x.numel() == 0) return;
  with_dnnl(ctx, [&] {
    const dnnl::memory::desc md = dnnl_plain_desc({x.numel()});
    dnnl_run(cached_gelu<dnnl::eltwise_forward>(ctx, x.numel()),
             {{DNNL_ARG_SRC, dnnl_memory(md, x)}, {DNNL_ARG_DST, dnnl_memory(md, out)}});
  });
}

/// X@GRAD = Out@GRAD * d gelu / dx at X (the derivative of the form gelu computed).
void gelu_grad(kernel_context& ctx) {
  const tensor& x = fp32_input(ctx, "X");
  const tensor& dout = fp32_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, x.shape());
  tensor& dx = ctx.output("X@GRAD");
  write_unaliased(dx, {&x}, [&](tensor& target) {
    target.resize(dtype::fp32, x.shape());
    if (x.numel() == 0) return;
    with_dnnl(ctx, [&] {
      const dnnl::memory::desc md = dnnl_plain_desc({x.numel()});
      dnnl_run(cached_gelu<dnnl::eltwise_backward>(ctx, x.numel()),
               {{DNNL_ARG_SRC, dnnl_memory(md, x)},
                {DNNL_ARG_DIFF_DST, dnnl_memory(md, dout)},
                {DNNL_ARG_DIFF_SRC, dnnl_memory(md, target)}});
    });
  });
}

} // namespace

void register_dnnl_eltwise_kernels(kernel_registry& r) {
  r.add("gelu", place::kind::cpu, gelu);
  r.add("gelu_grad", place::kind::cpu, gelu_grad);
}

} // namespace pe

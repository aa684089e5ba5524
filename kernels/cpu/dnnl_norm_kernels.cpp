// CPU kernels of batch_norm and batch_norm_grad, with the statistics conventions of
// Paddle's CPU kernel (paddle/phi/kernels/cpu/batch_norm_kernel.cc):
//   - training: mean and variance over N and the spatial axes; the variance is the biased
//     one (divided by the element count), and the running statistics become running *
//     momentum + batch * (1 - momentum) with that same biased variance;
//   - SavedMean is the batch mean, SavedVariance the inverse std 1 / sqrt(var + epsilon);
//   - global statistics (is_test without trainable_statistics, or use_global_stats) normalise
//     with Mean and Variance and leave them unchanged;
//   - at most one element per channel (N * spatial <= 1; 0 on a place an uneven split left
//     without rows) in training: Y = X, statistics untouched.
// X of rank 2 to 5 is viewed as [N, C, spatial, 1] (NCHW, rank 2 being [N, C]). Where each
// (n, c) plane holds at least norm_planes::min_spatial floats, the kernels run channel by
// channel on the plain layout (kernels/cpu/norm_planes.hpp), moving each tensor once: on the
// built-in CNN's and the ResNet fixture's shapes that is what memory allows, and oneDNN's
// route, below, moved each twice more. Smaller planes go through oneDNN's batch
// normalization: when C is a multiple of the channel block, on that view's blocked layout
// (dnnl_blocked), where oneDNN has jit kernels (about twice as fast as its plain-layout one,
// reorders included), the plain tensors reordered into and out of it; other channel counts
// would pad the block with channels the kernels compute for nothing, and run on the plain
// layout. Inputs and attributes are read and checked by kernels/batch_norm_ops.hpp's fronts,
// shared with the CUDA kernels.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <unordered_map>

#include "kernels/batch_norm_ops.hpp"
#include "kernels/cpu/blas.hpp"
#include "kernels/cpu/dnnl_cache.hpp"
#include "kernels/cpu/dnnl_context.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/cpu/norm_planes.hpp"

namespace pe {

namespace {

const auto scale_shift =
    dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;

/// X seen as [N, C, spatial, 1]: `data` is that plain view, `blocked` its layout for oneDNN
/// (the channel-blocked one, or `data` when C is no multiple of the block).
struct norm_view {
  std::int64_t n = 0, c = 0, spatial = 0;
  dnnl::memory::desc data, blocked, channel;
};

norm_view view_of(const bn_dims& d) {
  norm_view v{.n = d.n, .c = d.c, .spatial = d.spatial, .data = {}, .blocked = {}, .channel = {}};
  v.data = dnnl_plain_desc({v.n, v.c, v.spatial, 1});
  const dnnl::memory::desc blocked = dnnl_blocked(v.data);
  v.blocked = blocked.data.padded_dims[1] == v.c ? blocked : v.data;
  v.channel = dnnl_plain_desc({v.c});
  return v;
}

/// The thread's cached batch normalization primitive of `Primitive` (forward or backward)
/// over layout `md` with `epsilon` and `flags`; a forward one in training unless `global`.
template <class Primitive>
Primitive cached_norm(const dnnl::memory::desc& md, float epsilon, dnnl::normalization_flags flags,
                      bool global) {
  constexpr bool forward = std::is_same_v<Primitive, dnnl::batch_normalization_forward>;
  dnnl_key key(forward ? 'N' : 'B');
  key.add(md).add_bits(epsilon).add(static_cast<std::int64_t>(flags)).add(global ? 1 : 0);
  return dnnl_cached<Primitive>(std::move(key), [&] {
    const dnnl::batch_normalization_forward::primitive_desc hint(
        {global ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training, md,
         epsilon, flags},
        dnnl_engine());
    if constexpr (forward)
      return Primitive(hint);
    else
      return Primitive(dnnl::batch_normalization_backward::primitive_desc(
          {dnnl::prop_kind::backward, md, md, epsilon, flags}, dnnl_engine(), hint));
  });
}

/// Output `slot` (when bound) resized to [C]; nullptr when not bound.
float* channel_output(kernel_context& ctx, const char* slot, const norm_view& v) {
  if (!ctx.has_output(slot)) return nullptr;
  tensor& t = ctx.output(slot);
  t.resize(dtype::fp32, {v.c});
  return t.data<float>();
}

/// Copies `from` into output `slot` unless they are the same buffer (MeanOut is Mean).
void write_channel(kernel_context& ctx, const char* slot, const norm_view& v, const float* from) {
  float* to = channel_output(ctx, slot, v);
  if (to != nullptr && to != from)
    std::memcpy(to, from, static_cast<std::size_t>(v.c) * sizeof(float));
}

/// 1 / sqrt(variance + epsilon) per channel.
std::vector<float> inverse_std(const float* variance, std::int64_t channels, float epsilon) {
  std::vector<float> out(static_cast<std::size_t>(channels));
  for (std::size_t c = 0; c < out.size(); ++c) out[c] = 1.f / std::sqrt(variance[c] + epsilon);
  return out;
}

/// Y, and in training the batch statistics, channel by channel on the plain layout.
void forward_by_planes(const norm_view& v, const batch_norm_front& f, tensor& y, tensor& used_mean,
                       tensor& used_variance) {
  const norm_planes planes{v.n, v.c, v.spatial, blas_threads()};
  if (f.global) {
    const std::vector<float> inv_std = inverse_std(f.variance.data<float>(), v.c, f.epsilon);
    planes.normalize(f.x.data<float>(), f.mean.data<float>(), inv_std.data(), f.scale.data<float>(),
                     f.bias.data<float>(), y.data<float>());
  } else {
    planes.train_forward(f.x.data<float>(), f.scale.data<float>(), f.bias.data<float>(), f.epsilon,
                         y.data<float>(), used_mean.data<float>(), used_variance.data<float>());
  }
}

/// The same through oneDNN's batch normalization (in with_dnnl).
void forward_by_dnnl(const norm_view& v, const batch_norm_front& f, tensor& y, tensor& used_mean,
                     tensor& used_variance) {
  const auto flags = f.global ? scale_shift | dnnl::normalization_flags::use_global_stats : scale_shift;
  const auto primitive = cached_norm<dnnl::batch_normalization_forward>(v.blocked, f.epsilon, flags, f.global);
  const dnnl::memory src = dnnl_reordered(dnnl_memory(v.data, f.x), v.blocked);
  const dnnl::memory plain_dst = dnnl_memory(v.data, y);
  const dnnl::memory dst = dnnl_result(plain_dst, v.blocked);
  dnnl_run(primitive,
           {{DNNL_ARG_SRC, src},
            {DNNL_ARG_DST, dst},
            {DNNL_ARG_SCALE, dnnl_memory(v.channel, f.scale)},
            {DNNL_ARG_SHIFT, dnnl_memory(v.channel, f.bias)},
            {DNNL_ARG_MEAN, dnnl_memory(v.channel, used_mean)},
            {DNNL_ARG_VARIANCE, dnnl_memory(v.channel, used_variance)}});
  dnnl_store(dst, plain_dst);
}

void batch_norm_forward(kernel_context& ctx) {
  const batch_norm_front f = batch_norm_front_of(ctx, fp32_input);
  const tensor &x = f.x, &mean = f.mean, &variance = f.variance;
  const float momentum = f.momentum, epsilon = f.epsilon;
  const bool global = f.global;
  const norm_view v = view_of(f.d);
  if (ctx.has_output("ReserveSpace")) ctx.output("ReserveSpace").resize(dtype::fp32, {0});
  tensor& y = ctx.output("Y");
  y.resize(dtype::fp32, x.shape()); // in place on X is fine: both routes allow it

  // The statistics Y is normalised with: Mean and Variance, or the batch's.
  tensor used_mean = global ? mean : tensor(dtype::fp32, {v.c});
  tensor used_variance = global ? variance : tensor(dtype::fp32, {v.c});
  // At most one element per channel (Paddle's rule for one; none on a place that an uneven
  // split left without rows): Y = X, saved statistics zero, running ones unchanged.
  if (!global && v.n * v.spatial <= 1) {
    if (&y != &x && x.bytes() > 0) std::memcpy(y.raw(), x.raw(), x.bytes());
    std::memset(used_mean.raw(), 0, used_mean.bytes());
    std::memset(used_variance.raw(), 0, used_variance.bytes());
    write_channel(ctx, "SavedMean", v, used_mean.data<float>());
    write_channel(ctx, "SavedVariance", v, used_variance.data<float>());
    write_channel(ctx, "MeanOut", v, mean.data<float>());
    write_channel(ctx, "VarianceOut", v, variance.data<float>());
    return;
  }
  if (v.spatial >= norm_planes::min_spatial)
    forward_by_planes(v, f, y, used_mean, used_variance);
  else
    with_dnnl(ctx, [&] { forward_by_dnnl(v, f, y, used_mean, used_variance); });

  const float* m = used_mean.data<float>();
  const float* var = used_variance.data<float>();
  tensor inv_std(dtype::fp32, {v.c});
  for (std::int64_t c = 0; c < v.c; ++c)
    inv_std.data<float>()[c] = 1.f / std::sqrt(var[c] + epsilon);
  if (!global) {
    // Read before writing: MeanOut and VarianceOut are usually Mean and Variance.
    const float* running_mean = mean.data<float>();
    const float* running_var = variance.data<float>();
    tensor new_mean(dtype::fp32, {v.c}), new_var(dtype::fp32, {v.c});
    for (std::int64_t c = 0; c < v.c; ++c) {
      new_mean.data<float>()[c] = running_mean[c] * momentum + m[c] * (1 - momentum);
      new_var.data<float>()[c] = running_var[c] * momentum + var[c] * (1 - momentum);
    }
    write_channel(ctx, "MeanOut", v, new_mean.data<float>());
    write_channel(ctx, "VarianceOut", v, new_var.data<float>());
  } else {
    write_channel(ctx, "MeanOut", v, m);
    write_channel(ctx, "VarianceOut", v, var);
  }
  write_channel(ctx, "SavedMean", v, m);
  write_channel(ctx, "SavedVariance", v, inv_std.data<float>());
}

/// X@GRAD, Scale@GRAD and Bias@GRAD from Y@GRAD, each when bound. As Paddle's grad, global
/// statistics (is_test or use_global_stats) use MeanOut and VarianceOut (the running
/// statistics); training uses SavedMean and the inverse std SavedVariance, handed to oneDNN
/// as the variance 1 / inv_std^2 with epsilon 0 so that it recovers the same inverse std.
void batch_norm_backward(kernel_context& ctx) {
  const batch_norm_grad_front f = batch_norm_grad_front_of(ctx, fp32_input);
  const tensor &x = f.x, &dy = f.dy, &scale = f.scale, &bias = f.bias;
  const bool global = f.global;
  const norm_view v = view_of(f.d);

  tensor mean = f.mean, variance = f.variance;
  float epsilon = f.epsilon;
  if (!global) {
    const float* inv_std = f.variance.data<float>();
    variance = tensor(dtype::fp32, {v.c});
    for (std::int64_t c = 0; c < v.c; ++c)
      variance.data<float>()[c] = 1.f / (inv_std[c] * inv_std[c]);
    epsilon = 0;
  }

  tensor dx_scratch, dscale_scratch, dbias_scratch;
  const auto target = [&](const char* slot, tensor& scratch, const shape_t& dims) -> tensor& {
    tensor& t = ctx.has_output(slot) ? ctx.output(slot) : scratch;
    t.resize(dtype::fp32, dims);
    return t;
  };
  tensor& dscale = target("Scale@GRAD", dscale_scratch, {v.c});
  tensor& dbias = target("Bias@GRAD", dbias_scratch, {v.c});
  // At most one element per channel: the forward passed X through, so X@GRAD = Y@GRAD and
  // nothing reaches Scale and Bias.
  if (!global && v.n * v.spatial <= 1) {
    std::memset(dscale.raw(), 0, dscale.bytes());
    std::memset(dbias.raw(), 0, dbias.bytes());
    if (ctx.has_output("X@GRAD")) ctx.output("X@GRAD").copy_from(dy);
    return;
  }
  if (v.spatial >= norm_planes::min_spatial) {
    // The inverse std: SavedVariance in training, from VarianceOut under global statistics.
    const std::vector<float> inv_std =
        global ? inverse_std(f.variance.data<float>(), v.c, f.epsilon)
               : std::vector<float>(f.variance.data<float>(), f.variance.data<float>() + v.c);
    float* dx = nullptr;
    if (ctx.has_output("X@GRAD")) { // element by element: X@GRAD may be X or Y@GRAD
      tensor& out = ctx.output("X@GRAD");
      out.resize(dtype::fp32, x.shape());
      dx = out.data<float>();
    }
    norm_planes{v.n, v.c, v.spatial, blas_threads()}.backward(
        x.data<float>(), dy.data<float>(), f.mean.data<float>(), inv_std.data(), scale.data<float>(), global,
        dscale.data<float>(), dbias.data<float>(), dx);
    return;
  }
  const auto flags =
      global ? scale_shift | dnnl::normalization_flags::use_global_stats : scale_shift;
  tensor& dx_target = ctx.has_output("X@GRAD") ? ctx.output("X@GRAD") : dx_scratch;
  write_unaliased(dx_target, {&x}, [&](tensor& dx) {
    dx.resize(dtype::fp32, x.shape());
    with_dnnl(ctx, [&] {
      // Its hint is a training forward whatever the statistics, as the kernel always made it.
      const auto primitive = cached_norm<dnnl::batch_normalization_backward>(v.blocked, epsilon, flags, false);
      const dnnl::memory plain_dx = dnnl_memory(v.data, dx);
      const dnnl::memory diff_src = dnnl_result(plain_dx, v.blocked);
      dnnl_run(primitive,
               {{DNNL_ARG_SRC, dnnl_reordered(dnnl_memory(v.data, x), v.blocked)},
                {DNNL_ARG_DIFF_DST, dnnl_reordered(dnnl_memory(v.data, dy), v.blocked)},
                {DNNL_ARG_MEAN, dnnl_memory(v.channel, mean)},
                {DNNL_ARG_VARIANCE, dnnl_memory(v.channel, variance)},
                {DNNL_ARG_SCALE, dnnl_memory(v.channel, scale)},
                {DNNL_ARG_SHIFT, dnnl_memory(v.channel, bias)}, // oneDNN 2.6 wants it
                {DNNL_ARG_DIFF_SRC, diff_src},
                {DNNL_ARG_DIFF_SCALE, dnnl_memory(v.channel, dscale)},
                {DNNL_ARG_DIFF_SHIFT, dnnl_memory(v.channel, dbias)}});
      dnnl_store(diff_src, plain_dx);
    });
  });
}

} // namespace

void register_dnnl_norm_kernels(kernel_registry& r) {
  r.add("batch_norm", place::kind::cpu, batch_norm_forward);
  r.add("batch_norm_grad", place::kind::cpu, batch_norm_backward);
  // Unlowered (graph/sync_batch_norm.hpp), as the reference executor runs it: one place alone.
  r.add("sync_batch_norm", place::kind::cpu, batch_norm_forward);
  r.add("sync_batch_norm_grad", place::kind::cpu, batch_norm_backward);
}

} // namespace pe

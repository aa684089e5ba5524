// CPU kernels of the optimizer ops: sgd, momentum, adam, adamw, with Paddle's update
// formulas (including momentum's L2 decay and adamw's decoupled decay). Inputs and attributes
// are read and checked by kernels/optimizer_ops.hpp's fronts, shared with the CUDA kernels.
//
// Outputs normally are the inputs themselves (ParamOut is the tensor of Param, ...): every
// kernel reads element i of all its inputs before writing element i of any output, so it
// is correct in place as well as out of place.
//
// A SELECTED_ROWS Grad (a sparse embedding's) is merged first (merged_rows: repeats summed in
// the order they appear), then, as Paddle's sparse kernels do: sgd and lazy_mode adam update
// the rows it holds alone; momentum and adam without lazy_mode update every row, a row it
// does not hold with a zero gradient (momentum's results equal the dense ones'); adamw decays
// every row first; adam and adamw with no rows at all change nothing else (Paddle returns
// early, its beta powers included). Two quirks of Paddle's sparse adam are kept, since its
// results are the reference: in place, its step reads the beta powers it has just advanced
// (the dense kernel reads them before), and a row it does not hold gets an epsilon that is
// not bias-corrected.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/selected_rows.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "core/merged_rows.hpp"
#include "kernels/cpu/prefetch_rows.hpp"
#include "kernels/kernel.hpp"
#include "kernels/optimizer_ops.hpp"

namespace pe {

namespace {

/// The data of output `slot`, shaped like input `like`. When the output is that input (the
/// in-place case) it is left untouched: its current values are still to be read.
float* state_output(kernel_context& ctx, std::string_view slot, const tensor& like) {
  tensor& out = ctx.output(slot);
  if (&out != &like) out.resize(dtype::fp32, like.shape());
  return out.data<float>();
}

/// Which elements a SELECTED_ROWS gradient updates (a dense one updates all of them).
enum class sparse_update {
  touched_rows, ///< only the rows it holds
  every_row,    ///< every row, with a zero gradient where it holds none
};

/// Calls step(i, g, held) for each element i of Param (n elements) to update and its
/// gradient g: every element of a dense Grad (held); of a SELECTED_ROWS Grad, merged, those
/// `mode` says, rows ascending, `held` false for a row the gradient does not hold. Updating
/// touched rows only, it prefetches each array of `state` (the ones step reads and writes,
/// with Param's layout) prefetch_rows_ahead held rows ahead: the rows lie scattered over
/// the table.
template <class Step>
void for_each_grad(const tensor& grad, std::int64_t n, sparse_update mode, std::initializer_list<const float*> state,
                   Step&& step) {
  if (!grad.sparse_rows()) {
    const float* g = grad.data<float>();
    for (std::int64_t i = 0; i < n; ++i) step(i, g[i], true);
    return;
  }
  const merged_rows merged(grad);
  const std::int64_t width = merged.width();
  std::size_t k = 0;
  for (std::int64_t row = 0; row < merged.height(); ++row) {
    const bool held = k < merged.size() && merged.row(k) == row;
    if (held) {
      if (mode == sparse_update::touched_rows && k + prefetch_rows_ahead < merged.size())
        for (const float* array : state)
          prefetch_floats<true>(array + merged.row(k + prefetch_rows_ahead) * width, width);
      const float* g = merged.values(k++);
      for (std::int64_t j = 0; j < width; ++j) step(row * width + j, g[j], true);
    } else if (mode == sparse_update::every_row) {
      for (std::int64_t j = 0; j < width; ++j) step(row * width + j, 0.f, false);
    } else if (k == merged.size()) {
      return; // touched rows only, and none left
    } else {
      row = merged.row(k) - 1; // skip to the next held row
    }
  }
}

/// Whether Grad is SELECTED_ROWS without a single row.
bool no_rows(const tensor& grad) {
  return grad.sparse_rows() && grad.sparse_rows()->rows().empty();
}

/// The value of the scalar input `slot` (checked by optimizer_ops.hpp's scalar_input).
float scalar(const kernel_context& ctx, std::string_view slot) {
  return scalar_input(ctx, bound_input, slot).data<float>()[0];
}

/// The scalar input `slot` when bound (adam's Beta1Tensor, ...), else attribute `attr`.
float scalar_or_attr(const kernel_context& ctx, std::string_view slot, const std::string& attr) {
  const tensor* t = scalar_override(ctx, bound_input, slot);
  return t != nullptr ? t->data<float>()[0] : ctx.attrs().get<float>(attr);
}

/// ParamOut = Param - lr * Grad.
void sgd(kernel_context& ctx) {
  const sgd_front f = sgd_front_of(ctx, bound_input);
  const float lr = f.lr.data<float>()[0];
  const bool in_place = &ctx.output("ParamOut") == &f.param;
  float* param_out = state_output(ctx, "ParamOut", f.param);
  const float* p = f.param.data<float>();
  const std::int64_t n = f.param.numel();
  // A sparse update leaves the other rows as they were: copied when ParamOut is another tensor.
  if (f.grad.sparse_rows() && !in_place) std::copy(p, p + n, param_out);
  for_each_grad(f.grad, n, sparse_update::touched_rows, {param_out},
                [&](std::int64_t i, float g, bool) { param_out[i] = p[i] - lr * g; });
}

/// v = mu * v + g; p -= lr * (g + mu * v) with Nesterov, p -= lr * v without, where
/// g = rescale_grad * Grad, plus regularization_coeff * p under "l2_decay".
void momentum(kernel_context& ctx) {
  const momentum_front f = momentum_front_of(ctx, bound_input);
  const float lr = f.lr.data<float>()[0];
  const float* velocity = f.velocity.data<float>();
  float* param_out = state_output(ctx, "ParamOut", f.param);
  float* velocity_out = state_output(ctx, "VelocityOut", f.velocity);
  const float* p = f.param.data<float>();
  const std::int64_t n = f.param.numel();
  for_each_grad(f.grad, n, sparse_update::every_row, {}, [&](std::int64_t i, float grad, bool) {
    const float g = f.rescale * grad + f.decay * p[i];
    const float v = f.mu * velocity[i] + g;
    const float step = f.nesterov ? g + f.mu * v : v;
    param_out[i] = p[i] - lr * step;
    velocity_out[i] = v;
  });
}

/// Writes `from` to output `slot` unchanged (nothing to do when it is that input).
void keep_state(kernel_context& ctx, std::string_view slot, const tensor& from) {
  tensor& out = ctx.output(slot);
  if (&out != &from) out.copy_from(from);
}

/// Paddle's Adam: with b1p, b2p the running powers of beta1, beta2,
///   lr_t = lr * sqrt(1 - b2p) / (1 - b1p)
///   m1 = beta1 * m1 + (1 - beta1) * g;  m2 = beta2 * m2 + (1 - beta2) * g^2
///   p -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 - b2p))
/// and the powers advance by one factor of beta1, beta2 unless use_global_beta_pow.
/// Beta1Tensor, Beta2Tensor, EpsilonTensor override the attributes when bound; a true
/// SkipUpdate leaves every state as it was. adamw's decay as decoupled_decay says (as only p
/// reads p, decaying first is the same as decaying after the Adam step).
void adam_update(kernel_context& ctx, decoupled_decay decay) {
  const adam_front f = adam_front_of(ctx, bound_input);
  const float* moment1 = f.moment1.data<float>();
  const float* moment2 = f.moment2.data<float>();
  const float lr = scalar(ctx, "LearningRate") * decay.lr_ratio;
  const float beta1_pow = scalar(ctx, "Beta1Pow");
  const float beta2_pow = scalar(ctx, "Beta2Pow");
  const float beta1 = scalar_or_attr(ctx, "Beta1Tensor", "beta1");
  const float beta2 = scalar_or_attr(ctx, "Beta2Tensor", "beta2");
  const float epsilon = scalar_or_attr(ctx, "EpsilonTensor", "epsilon");
  const auto keep_all_but = [&](std::string_view except) {
    for (const char* slot : {"Param", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"})
      if (slot != except) keep_state(ctx, std::string(slot) + "Out", ctx.input(slot));
  };

  if (const tensor* skip = skip_update_input(ctx, bound_input); skip != nullptr && skip->data<bool>()[0])
    return keep_all_but("");

  const std::int64_t n = f.param.numel();
  float* param_out = state_output(ctx, "ParamOut", f.param);
  const float* p = f.param.data<float>();
  float keep = 1.f - lr * decay.coeff;
  float step_lr = lr;
  const bool sparse = f.grad.sparse_rows() != nullptr;
  const bool global_pow = ctx.attrs().get<bool>("use_global_beta_pow");
  // Paddle's sparse kernel advances the beta powers before its step, which then reads them
  // from its outputs: where they are the inputs (in place, as programs have them), the step's
  // bias correction uses the advanced powers.
  const bool advanced_pows = sparse && !global_pow && &ctx.output("Beta1PowOut") == &ctx.input("Beta1Pow") &&
                             &ctx.output("Beta2PowOut") == &ctx.input("Beta2Pow");
  if (sparse) {
    // Paddle's sparse kernel: adamw decays every row first, also for a gradient without
    // rows, then takes Adam's step with the unscaled learning rate (lr_ratio scales the decay
    // alone). ParamOut then holds the Param the step reads; rows a lazy step leaves alone keep
    // their state, copied where an output is another tensor.
    if (decay.coeff != 0.f)
      for (std::int64_t i = 0; i < n; ++i) param_out[i] = p[i] * keep;
    else if (param_out != p)
      std::copy(p, p + n, param_out);
    if (no_rows(f.grad)) return keep_all_but("Param");
    p = param_out;
    keep = 1.f;
    step_lr = scalar(ctx, "LearningRate");
  }
  float* moment1_out = state_output(ctx, "Moment1Out", f.moment1);
  float* moment2_out = state_output(ctx, "Moment2Out", f.moment2);
  if (sparse && moment1_out != moment1) std::copy(moment1, moment1 + n, moment1_out);
  if (sparse && moment2_out != moment2) std::copy(moment2, moment2 + n, moment2_out);
  if (global_pow) {
    keep_state(ctx, "Beta1PowOut", ctx.input("Beta1Pow"));
    keep_state(ctx, "Beta2PowOut", ctx.input("Beta2Pow"));
  } else {
    state_output(ctx, "Beta1PowOut", ctx.input("Beta1Pow"))[0] = beta1_pow * beta1;
    state_output(ctx, "Beta2PowOut", ctx.input("Beta2Pow"))[0] = beta2_pow * beta2;
  }

  const float b1p = advanced_pows ? beta1_pow * beta1 : beta1_pow;
  const float b2p = advanced_pows ? beta2_pow * beta2 : beta2_pow;
  const float bias2 = std::sqrt(1.f - b2p);
  const float lr_t = step_lr * bias2 / (1.f - b1p);
  const float eps_t = epsilon * bias2;
  const bool lazy = sparse && ctx.attrs().get<bool>("lazy_mode"); // only sparse gradients read it
  // A row the gradient does not hold (without lazy_mode) gets Paddle's zero-gradient step,
  // whose epsilon is not bias-corrected.
  for_each_grad(f.grad, n, lazy ? sparse_update::touched_rows : sparse_update::every_row,
                {param_out, moment1_out, moment2_out}, [&](std::int64_t i, float g, bool held) {
    const float m1 = beta1 * moment1[i] + (1.f - beta1) * g;
    const float m2 = beta2 * moment2[i] + (1.f - beta2) * g * g;
    param_out[i] = p[i] * keep - lr_t * m1 / (std::sqrt(m2) + (held ? eps_t : epsilon));
    moment1_out[i] = m1;
    moment2_out[i] = m2;
  });
}

} // namespace

void register_optimizer_kernels(kernel_registry& r) {
  register_optimizer_ops(r, place::kind::cpu, {sgd, momentum, adam_update});
}

} // namespace pe

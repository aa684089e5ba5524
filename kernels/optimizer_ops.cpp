#include "kernels/optimizer_ops.hpp"

#include <string>

#include "core/selected_rows.hpp"

namespace pe {

void expect_single_precision(const kernel_context& ctx) {
  if (ctx.attrs().get<bool>("multi_precision"))
    ctx.fail("multi_precision (FP32 master copies of FP16 parameters) is not supported");
}

const tensor& param_input(const kernel_context& ctx, input_fn input) {
  const tensor& param = input(ctx, "Param", 0);
  if (param.type() != dtype::fp32) ctx.fail("Param must be FP32, got " + to_string(param.type()));
  return param;
}

const tensor& like_param(const kernel_context& ctx, input_fn input, std::string_view slot, const tensor& param) {
  const tensor& t = input(ctx, slot, 0);
  if (t.type() != dtype::fp32 || t.shape() != param.shape())
    ctx.fail(std::string(slot) + " is " + to_string(t.type()) + " " + to_string(t.shape()) + " but Param is " +
             to_string(param.type()) + " " + to_string(param.shape()));
  return t;
}

const tensor& grad_input(const kernel_context& ctx, input_fn input, const tensor& param) {
  const tensor& grad = input(ctx, "Grad", 0);
  const auto& index = grad.sparse_rows();
  if (!index) return like_param(ctx, input, "Grad", param);
  const std::int64_t height = param.rank() == 0 ? 1 : param.dim(0);
  const std::int64_t width = height == 0 ? 0 : param.numel() / height;
  if (grad.type() != dtype::fp32 || grad.rank() != 2 || grad.dim(1) != width || index->height() != height)
    ctx.fail("Grad is SELECTED_ROWS of " + to_string(grad.type()) + " " + to_string(grad.shape()) +
             " in a table of " + std::to_string(index->height()) + " rows, but Param is " +
             to_string(param.type()) + " " + to_string(param.shape()) + " (rows of width " +
             std::to_string(width) + " of " + std::to_string(height) + " rows expected)");
  return grad;
}

const tensor& scalar_input(const kernel_context& ctx, input_fn input, std::string_view slot) {
  const tensor& t = input(ctx, slot, 0);
  if (t.type() != dtype::fp32 || t.numel() != 1)
    ctx.fail(std::string(slot) + " must be one FP32 element, got " + to_string(t.type()) + " " +
             to_string(t.shape()));
  return t;
}

const tensor* scalar_override(const kernel_context& ctx, input_fn input, std::string_view slot) {
  return ctx.has_input(slot) ? &scalar_input(ctx, input, slot) : nullptr;
}

const tensor* skip_update_input(const kernel_context& ctx, input_fn input) {
  if (!ctx.has_input("SkipUpdate")) return nullptr;
  const tensor& skip = input(ctx, "SkipUpdate", 0);
  if (skip.type() != dtype::boolean || skip.numel() != 1)
    ctx.fail("SkipUpdate must be one BOOL element, got " + to_string(skip.type()) + " " + to_string(skip.shape()));
  return &skip;
}

sgd_front sgd_front_of(const kernel_context& ctx, input_fn input) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx, input);
  const tensor& grad = grad_input(ctx, input, param);
  return {param, grad, scalar_input(ctx, input, "LearningRate")};
}

momentum_front momentum_front_of(const kernel_context& ctx, input_fn input) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx, input);
  const tensor& grad = grad_input(ctx, input, param);
  const tensor& velocity = like_param(ctx, input, "Velocity", param);
  const tensor& lr = scalar_input(ctx, input, "LearningRate");
  const attribute_map& a = ctx.attrs();
  const float mu = a.get<float>("mu");
  const bool nesterov = a.get<bool>("use_nesterov");
  const float rescale = a.get<float>("rescale_grad");
  const auto& method = a.get<std::string>("regularization_method");
  if (!method.empty() && method != "l2_decay")
    ctx.fail("regularization_method must be \"\" or \"l2_decay\", got \"" + method + "\"");
  const float decay = method.empty() ? 0.f : a.get<float>("regularization_coeff");
  return {param, grad, velocity, lr, mu, rescale, decay, nesterov};
}

adam_front adam_front_of(const kernel_context& ctx, input_fn input) {
  expect_single_precision(ctx);
  const tensor& param = param_input(ctx, input);
  const tensor& grad = grad_input(ctx, input, param);
  const tensor& moment1 = like_param(ctx, input, "Moment1", param);
  return {param, grad, moment1, like_param(ctx, input, "Moment2", param)};
}

void register_optimizer_ops(kernel_registry& r, place::kind kind, const optimizer_kernels& k) {
  // The kernel `fn`, on other places than CPU ones after refusing a sparse Grad.
  const auto dense_unless_cpu = [kind](kernel_fn fn) -> kernel_fn {
    if (kind == place::kind::cpu) return fn;
    return [fn = std::move(fn)](kernel_context& ctx) {
      if (ctx.input("Grad").sparse_rows())
        ctx.fail("Grad is SELECTED_ROWS (a sparse gradient), which only CPU places update so far");
      fn(ctx);
    };
  };
  r.add("sgd", kind, dense_unless_cpu(k.sgd));
  r.add("momentum", kind, dense_unless_cpu(k.momentum));
  r.add("adam", kind, dense_unless_cpu([adam = k.adam](kernel_context& ctx) { adam(ctx, {}); }));
  r.add("adamw", kind, dense_unless_cpu([adam = k.adam](kernel_context& ctx) {
    const attribute_map& a = ctx.attrs();
    adam(ctx, {.lr_ratio = a.get<float>("lr_ratio"), .coeff = a.get<bool>("with_decay") ? a.get<float>("coeff") : 0.f});
  }));
}

} // namespace pe

// CUDA kernels of the activations (relu, tanh, sigmoid, leaky_relu, gelu and their grads),
// scale and sum: element maps of elementwise_functors.hpp over the grid-stride launcher. sum's
// and scale's fronts are kernels/math_ops.hpp's, shared with the CPU kernels.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/elementwise_functors.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/math_ops.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

/// Registers `type` (Out = Forward(X)) and `type`_grad (X@GRAD = Backward(`grad_input`,
/// Out@GRAD)), the functors built from the context's attributes by make_forward/make_backward.
template <class MakeForward, class MakeBackward>
void add_activation(kernel_registry& r, const std::string& type, const char* grad_input,
                    MakeForward make_forward, MakeBackward make_backward) {
  r.add(type, gpu, [make_forward](kernel_context& ctx) {
    gpu_map_unary(ctx, "X", "Out", make_forward(ctx));
  });
  r.add(type + "_grad", gpu, [grad_input, make_backward](kernel_context& ctx) {
    gpu_map_binary(ctx, grad_input, "Out@GRAD", "X@GRAD", make_backward(ctx));
  });
}

/// Out = X[0] + X[1] + ...; in place when Out is one of the inputs (sum_op), as the CPU kernel.
void sum(kernel_context& ctx) {
  sum_op(ctx, gpu_fp32_input, [&ctx](tensor& into, const std::vector<const tensor*>& inputs, std::size_t start) {
    resize_output(ctx, into, dtype::fp32, inputs[0]->shape());
    if (start == inputs.size()) {
      copy_on_device(ctx, into.raw(), inputs[0]->raw(), inputs[0]->bytes());
      start = 0;
    }
    for (std::size_t k = 0; k < inputs.size(); ++k)
      if (k != start) for_each(ctx, into.numel(), add_into_map{inputs[k]->data<float>(), into.data<float>()});
  });
}

} // namespace

void register_activation_kernels(kernel_registry& r) {
  add_activation(
      r, "relu", "Out", [](const kernel_context&) { return relu_fn{}; },
      [](const kernel_context&) { return relu_grad_fn{}; });
  add_activation(
      r, "tanh", "Out", [](const kernel_context&) { return tanh_fn{}; },
      [](const kernel_context&) { return tanh_grad_fn{}; });
  add_activation(
      r, "sigmoid", "Out", [](const kernel_context&) { return sigmoid_fn{}; },
      [](const kernel_context&) { return sigmoid_grad_fn{}; });
  add_activation(
      r, "leaky_relu", "X",
      [](const kernel_context& ctx) { return leaky_relu_fn{ctx.attrs().get<float>("alpha")}; },
      [](const kernel_context& ctx) {
        return leaky_relu_grad_fn{ctx.attrs().get<float>("alpha")};
      });
  add_activation(
      r, "gelu", "X",
      [](const kernel_context& ctx) { return gelu_fn{ctx.attrs().get<bool>("approximate")}; },
      [](const kernel_context& ctx) {
        return gelu_grad_fn{ctx.attrs().get<bool>("approximate")};
      });
  r.add("scale", gpu, [](kernel_context& ctx) {
    const auto [s, b] = scale_params_of(ctx);
    gpu_map_unary(ctx, "X", "Out", scale_fn{s, b});
  });
  r.add("sum", gpu, sum);
}

} // namespace pe::cuda

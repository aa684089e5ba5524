#pragma once

namespace pe {

class kernel_registry;

/// Adds every CPU kernel to `r`. Each group lives in its own file.
void register_cpu_kernels(kernel_registry& r);

/// mul, matmul_v2, elementwise_add, relu, tanh, sigmoid, scale, sum, mean, reduce_mean
/// and their _grad kernels (math_kernels.cpp, activation_kernels.cpp, reduce_kernels.cpp).
void register_math_kernels(kernel_registry& r);

/// softmax_with_cross_entropy, top_k, accuracy and the _grad kernels (loss_kernels.cpp).
void register_loss_kernels(kernel_registry& r);

/// fill_constant, uniform_random, gaussian_random (init_kernels.cpp).
void register_init_kernels(kernel_registry& r);

/// sgd, momentum, adam (optimizer_kernels.cpp).
void register_optimizer_kernels(kernel_registry& r);

} // namespace pe

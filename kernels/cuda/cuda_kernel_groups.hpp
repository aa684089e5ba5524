#pragma once

// The CUDA kernels by file; register_cuda_kernels (cuda_kernels.cpp) calls them all.

namespace pe {
class kernel_registry;
}

namespace pe::cuda {

/// relu, tanh, sigmoid, leaky_relu, gelu and their grads, scale, sum (activation_kernels.cu).
void register_activation_kernels(kernel_registry& r);
/// elementwise_add, _sub, _mul, _div, _max, _min, _pow and their grads (elementwise_kernels.cu).
void register_elementwise_kernels(kernel_registry& r);
/// mean, reduce_mean, reduce_sum and their grads (reduce_kernels.cu).
void register_reduce_kernels(kernel_registry& r);
/// softmax, log_softmax and their grads (softmax_kernels.cu).
void register_softmax_kernels(kernel_registry& r);
/// softmax_with_cross_entropy, cross_entropy, cross_entropy2, top_k, top_k_v2, accuracy and
/// the grads (loss_kernels.cu).
void register_loss_kernels(kernel_registry& r);
/// sgd, momentum, adam, adamw (optimizer_kernels.cu).
void register_optimizer_kernels(kernel_registry& r);
/// assign, reshape2, flatten_contiguous_range, squeeze2, unsqueeze2, transpose2, concat,
/// split, cast and the grads (shape_kernels.cu).
void register_shape_kernels(kernel_registry& r);
/// fill_constant, fill_any_like, uniform_random, gaussian_random, dropout, dropout_grad
/// (init_dropout_kernels.cu).
void register_init_dropout_kernels(kernel_registry& r);
/// mul, matmul_v2, matmul and their grads through cuBLAS (gemm_kernels.cu).
void register_gemm_kernels(kernel_registry& r);

/// pool2d and its grad (window_kernels.cu).
void register_window_kernels(kernel_registry& r);
/// conv2d, depthwise_conv2d and their grads through cuDNN (conv_kernels.cu).
void register_conv_kernels(kernel_registry& r);
/// batch_norm and batch_norm_grad (batch_norm_kernels.cu).
void register_batch_norm_kernels(kernel_registry& r);
/// layer_norm and layer_norm_grad (layer_norm_kernels.cu).
void register_layer_norm_kernels(kernel_registry& r);
/// lookup_table_v2 and lookup_table_v2_grad (lookup_table_kernels.cu).
void register_lookup_table_kernels(kernel_registry& r);
/// sqrt, squared_l2_norm and their grads (global_norm_kernels.cu).
void register_global_norm_kernels(kernel_registry& r);
/// cumsum, whose grad is a cumsum (cumsum_kernels.cu).
void register_cumsum_kernels(kernel_registry& r);
/// slice and slice_grad (slice_kernels.cu).
void register_slice_kernels(kernel_registry& r);
/// less_than, less_equal, greater_than, greater_equal, equal, not_equal, logical_not,
/// logical_and, logical_or, logical_xor (condition_kernels.cu).
void register_condition_kernels(kernel_registry& r);
/// conditional_block, select_input, increment (control_flow_kernels.cu).
void register_control_flow_kernels(kernel_registry& r);
/// sync_batch_norm_stats, _apply, _grad_stats, _grad_apply, and c_allreduce_sum on a world of
/// one place (sync_batch_norm_kernels.cu).
void register_sync_batch_norm_kernels(kernel_registry& r);
/// The GPU places' finite check of --check-nan-inf (finite_check_kernels.cu).
void register_finite_check_kernels(kernel_registry& r);

} // namespace pe::cuda

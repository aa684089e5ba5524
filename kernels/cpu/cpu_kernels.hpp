#pragma once

namespace pe {

class kernel_registry;

/// Adds every CPU kernel to `r`. Each group lives in its own file.
void register_cpu_kernels(kernel_registry& r);

/// mul, matmul_v2, matmul, relu, tanh, sigmoid, leaky_relu, scale, sum, mean, reduce_mean,
/// reduce_sum and their _grad kernels (math_kernels.cpp, gemm_kernels.cpp,
/// activation_kernels.cpp, reduce_kernels.cpp).
void register_math_kernels(kernel_registry& r);

/// elementwise_add, _sub, _mul, _div, _max, _min, _pow and their _grad kernels
/// (elementwise_kernels.cpp).
void register_elementwise_kernels(kernel_registry& r);

/// softmax, log_softmax and their _grad kernels (softmax_kernels.cpp).
void register_softmax_kernels(kernel_registry& r);

/// assign, reshape2, flatten_contiguous_range, transpose2, squeeze2, unsqueeze2, concat, split,
/// cast and the _grad kernels of the XShape ops and concat (shape_kernels.cpp).
void register_shape_kernels(kernel_registry& r);

/// softmax_with_cross_entropy, cross_entropy, cross_entropy2, top_k, top_k_v2, accuracy and
/// the _grad kernels (loss_kernels.cpp).
void register_loss_kernels(kernel_registry& r);

/// dropout and dropout_grad (dropout_kernels.cpp).
void register_dropout_kernels(kernel_registry& r);

/// fill_constant, fill_any_like, uniform_random, gaussian_random (init_kernels.cpp).
void register_init_kernels(kernel_registry& r);

/// sgd, momentum, adam (optimizer_kernels.cpp).
void register_optimizer_kernels(kernel_registry& r);

/// conv2d, depthwise_conv2d, pool2d, batch_norm, gelu and their _grad kernels through oneDNN
/// (dnnl_context.cpp, dnnl_conv_kernels.cpp, dnnl_pool_kernels.cpp, dnnl_norm_kernels.cpp,
/// dnnl_eltwise_kernels.cpp).
void register_dnnl_kernels(kernel_registry& r);

/// layer_norm and layer_norm_grad (layer_norm_kernels.cpp).
void register_layer_norm_kernels(kernel_registry& r);

/// lookup_table_v2 and lookup_table_v2_grad (lookup_table_kernels.cpp).
void register_lookup_table_kernels(kernel_registry& r);

/// sqrt, squared_l2_norm and their _grad kernels (global_norm_kernels.cpp).
void register_global_norm_kernels(kernel_registry& r);

/// cumsum, whose grad is a cumsum (cumsum_kernels.cpp).
void register_cumsum_kernels(kernel_registry& r);

/// slice and slice_grad (slice_kernels.cpp).
void register_slice_kernels(kernel_registry& r);

/// less_than, less_equal, greater_than, greater_equal, equal, not_equal, logical_not,
/// logical_and, logical_or, logical_xor (condition_kernels.cpp).
void register_condition_kernels(kernel_registry& r);

/// conditional_block, select_input, increment (control_flow_kernels.cpp).
void register_control_flow_kernels(kernel_registry& r);

/// sync_batch_norm_stats, _apply, _grad_stats, _grad_apply, and c_allreduce_sum on a world of
/// one place (sync_batch_norm_kernels.cpp).
void register_sync_batch_norm_kernels(kernel_registry& r);

/// sparse_rows_pack, sparse_rows_scatter, and c_broadcast on a world of one place
/// (touched_rows_kernels.cpp).
void register_touched_rows_kernels(kernel_registry& r);

/// The CPU places' finite check of --check-nan-inf (finite_check.cpp).
void register_cpu_finite_check(kernel_registry& r);

} // namespace pe

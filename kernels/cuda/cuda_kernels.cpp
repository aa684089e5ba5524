#include "kernels/cuda/cuda_kernels.hpp"

#include "kernels/cuda/cuda_kernel_groups.hpp"

namespace pe {

void register_cuda_kernels(kernel_registry& r) {
  cuda::register_activation_kernels(r);
  cuda::register_elementwise_kernels(r);
  cuda::register_reduce_kernels(r);
  cuda::register_softmax_kernels(r);
  cuda::register_loss_kernels(r);
  cuda::register_optimizer_kernels(r);
  cuda::register_shape_kernels(r);
  cuda::register_init_dropout_kernels(r);
  cuda::register_gemm_kernels(r);
  cuda::register_window_kernels(r);
  cuda::register_conv_kernels(r);
  cuda::register_batch_norm_kernels(r);
  cuda::register_layer_norm_kernels(r);
  cuda::register_lookup_table_kernels(r);
  cuda::register_global_norm_kernels(r);
  cuda::register_cumsum_kernels(r);
  cuda::register_slice_kernels(r);
  cuda::register_condition_kernels(r);
  cuda::register_control_flow_kernels(r);
  cuda::register_sync_batch_norm_kernels(r);
  cuda::register_finite_check_kernels(r);
}

} // namespace pe

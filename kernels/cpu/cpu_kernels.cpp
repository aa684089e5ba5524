#include "kernels/cpu/cpu_kernels.hpp"

namespace pe {

void register_cpu_kernels(kernel_registry& r) {
  register_math_kernels(r);
  register_elementwise_kernels(r);
  register_softmax_kernels(r);
  register_shape_kernels(r);
  register_loss_kernels(r);
  register_dropout_kernels(r);
  register_init_kernels(r);
  register_optimizer_kernels(r);
  register_dnnl_kernels(r);
  register_layer_norm_kernels(r);
  register_lookup_table_kernels(r);
  register_global_norm_kernels(r);
  register_cumsum_kernels(r);
  register_slice_kernels(r);
  register_condition_kernels(r);
  register_control_flow_kernels(r);
  register_sync_batch_norm_kernels(r);
  register_touched_rows_kernels(r);
  register_cpu_finite_check(r);
}

} // namespace pe

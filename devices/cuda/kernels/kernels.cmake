# The CUDA kernels of GPU places (devices/cuda/kernels): included by devices/cuda/CMakeLists.txt,
# which compiles PE_CUDA_KERNEL_SOURCES into pe_cuda. The headers without CUDA (the functors and
# the index math) are also compiled by the host tests (tests/cuda_kernels_functors_test.cpp).
set(PE_CUDA_KERNEL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/activation_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/batch_norm_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/conv_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/cuda_context.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_kernels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cudnn_handles.cpp
  ${CMAKE_CURRENT_LIST_DIR}/elementwise_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/finite_check_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/gemm_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/init_dropout_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/loss_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/reduce_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/shape_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/softmax_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/window_kernels.cu
)

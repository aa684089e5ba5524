#pragma once

// Owning wrappers of the cuDNN descriptors the convolutions use (tensor, filter,
// convolution): created in the constructor (failing through the kernel context, naming the
// op), destroyed in the destructor, so a kernel that throws half-way leaks none.

#include <cudnn.h>

#include "kernels/cuda/cudnn_handles.hpp"

namespace pe::cuda {

template <class T, cudnnStatus_t (*create)(T*), cudnnStatus_t (*destroy)(T)>
class cudnn_descriptor {
 public:
  cudnn_descriptor(const kernel_context& ctx, const char* what) { check(ctx, create(&desc_), what); }
  ~cudnn_descriptor() {
    if (desc_ != nullptr) destroy(desc_);
  }
  cudnn_descriptor(const cudnn_descriptor&) = delete;
  cudnn_descriptor& operator=(const cudnn_descriptor&) = delete;

  T get() const { return desc_; }
  operator T() const { return desc_; }

 private:
  T desc_ = nullptr;
};

using tensor_descriptor = cudnn_descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                           cudnnDestroyTensorDescriptor>;
using filter_descriptor = cudnn_descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                           cudnnDestroyFilterDescriptor>;
using convolution_descriptor =
    cudnn_descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                     cudnnDestroyConvolutionDescriptor>;

} // namespace pe::cuda

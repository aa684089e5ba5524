#pragma once

// What the two CUDA kernel tests share: cuda_kernels_functors_test replays the kernels' plans
// on the host and cuda_kernels_gpu_test runs the kernels on a GPU, both against the CPU
// kernels, over the same kinds of convolution and with batch_norm's attributes as programs
// carry them.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/attribute.hpp"
#include "kernels/math_shapes.hpp"

namespace pe::testing {

/// A convolution as cuDNN runs it: the op (conv2d or depthwise_conv2d), input channels `c`,
/// output channels `m`, groups, and its geometry as Paddle's attributes give it.
struct conv_case {
  std::string op;
  std::int64_t c, m, groups;
  std::vector<std::int32_t> strides, paddings, dilations;
  std::string algorithm; ///< padding_algorithm: EXPLICIT, SAME or VALID

  /// The op's attributes, NCHW.
  std::vector<std::pair<std::string, attribute>> attrs() const {
    return {{"strides", strides},
            {"paddings", paddings},
            {"dilations", dilations},
            {"groups", static_cast<std::int32_t>(groups)},
            {"padding_algorithm", algorithm},
            {"data_format", std::string("NCHW")}};
  }

  /// "conv2d groups 2 strides [2, 1] paddings [1, 2] dilations [1, 1] EXPLICIT": which case
  /// failed, for SCOPED_TRACE.
  std::string describe() const {
    return op + " groups " + std::to_string(groups) + " strides " + pe::to_string(strides) +
           " paddings " + pe::to_string(paddings) + " dilations " + pe::to_string(dilations) +
           " " + algorithm;
  }
};

/// batch_norm's attributes as a program carries them: momentum 0.9, epsilon 1e-5, NCHW.
inline std::vector<std::pair<std::string, attribute>> batch_norm_attrs(
    bool is_test, bool trainable_statistics = false, bool use_global_stats = false) {
  return {{"momentum", 0.9f},
          {"epsilon", 1e-5f},
          {"is_test", is_test},
          {"trainable_statistics", trainable_statistics},
          {"use_global_stats", use_global_stats},
          {"data_layout", std::string("NCHW")}};
}

} // namespace pe::testing

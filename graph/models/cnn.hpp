#pragma once

#include <vector>

#include "graph/models/mlp.hpp"

namespace pe {

/// The built-in LeNet-like CNN for 28x28 grey images: two blocks of conv(5x5, same padding) ->
/// batch_norm -> relu -> max pool(2x2, stride 2), then fully connected layers of `fc` widths
/// with relu, then fc(classes) -> softmax_with_cross_entropy -> mean. The image feed is
/// [-1, 1, 28, 28]. The test program runs batch_norm with its moving statistics (is_test).
struct cnn_config {
  int image_side = 28;
  std::vector<int> channels = {32, 64}; ///< output channels of the two conv blocks
  std::vector<int> fc = {120, 84};      ///< hidden fully connected widths
  int classes = 10;
  std::string optimizer = "momentum"; ///< sgd | momentum | adam
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  std::uint64_t seed = 1; ///< parameter initialisation seed
};

/// Throws pe::error for an unknown optimizer or non-positive sizes.
model_programs build_cnn(const cnn_config& config);

} // namespace pe

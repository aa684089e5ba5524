#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/proto.hpp"

namespace pe {

/// A training setup as Paddle users write it: a startup program (parameter init), a main
/// program (forward, backward, optimizer) and a test program (forward with accuracy), plus
/// the names a driver needs to feed and fetch.
struct model_programs {
  proto::ProgramDesc startup;
  proto::ProgramDesc main;
  proto::ProgramDesc test;
  /// FP32 input [-1, width] of the built-in models; empty for a loaded program, whose
  /// feeds are its data inputs (analyze_program), any names and dtypes.
  std::string image;
  std::string label;    ///< INT64 class ids [-1, 1]: what --eval's accuracy compares with
  std::string loss;     ///< FP32 scalar: mean cross-entropy
  std::string accuracy; ///< FP32 scalar in the test program (and the main program)
};

/// The built-in multi-layer perceptron: input -> fc(hidden[i], relu)... -> fc(classes)
/// -> softmax_with_cross_entropy -> mean, trained by `optimizer` at rate `learning_rate`.
struct mlp_config {
  int input_width = 784;
  std::vector<int> hidden = {256, 128};
  int classes = 10;
  std::string optimizer = "sgd"; ///< sgd | momentum | adam
  float learning_rate = 0.1f;
  float momentum = 0.9f;
  std::uint64_t seed = 1; ///< parameter initialisation seed
};

/// Throws pe::error for an unknown optimizer or non-positive widths.
model_programs build_mlp(const mlp_config& config);

} // namespace pe

#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/builder.hpp"

namespace pe {

/// Appends an optimizer's ops (op_role Optimize) for every (param, grad) pair, its state
/// variables (learning rate, velocity, moments, beta powers) to both programs, and their
/// initialisation to the startup program. `kind` is sgd, momentum or adam; throws pe::error
/// for anything else.
struct optimizer_config {
  std::string kind = "sgd";
  float learning_rate = 0.01f;
  float momentum = 0.9f; ///< momentum's mu
  bool nesterov = false;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f; ///< adam
};
void append_optimizer(program_builder& builder, const optimizer_config& config,
                      const std::vector<std::pair<std::string, std::string>>& params_grads);

} // namespace pe

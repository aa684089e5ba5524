#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/builder.hpp"

namespace pe {

/// How a built-in model is trained: which optimizer, at what rate, with its settings.
struct optimizer_config {
  std::string kind = "sgd"; ///< a name from optimizer_kinds(): sgd, momentum, adam
  float learning_rate = 0.01f;
  float momentum = 0.9f; ///< momentum's mu
  bool nesterov = false;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f; ///< adam
};

/// What one parameter's update op is given: its slots and attributes, to which an
/// optimizer adds its state variables and settings.
struct optimizer_update {
  std::string param;
  shape_t dims;
  slot_args inputs;
  slot_args outputs;
  std::vector<std::pair<std::string, attribute>> attrs;
};

/// An optimizer by name: its op type is its name (Paddle's sgd, momentum, adam ops), and
/// `add_state` adds the per-parameter state it keeps (velocity, moments, beta powers,
/// created through the builder so the startup program initialises them) and its attributes.
/// A new one is an op (graph/ops/, kernels/) plus one entry in optimizer.cpp's list.
struct optimizer_kind {
  std::string name;
  double default_learning_rate; ///< what pe-actor-run uses without --lr
  std::string about;            ///< for --help
  void (*add_state)(program_builder& builder, const optimizer_config& config, optimizer_update& update);
};

/// Every optimizer, in the order --help lists them.
const std::vector<optimizer_kind>& optimizer_kinds();

/// The optimizer called `name`. Throws pe::error "unknown optimizer 'x' (sgd, momentum or
/// adam)".
const optimizer_kind& find_optimizer(const std::string& name);

/// Appends an optimizer's ops (op_role Optimize) for every (param, grad) pair, its state
/// variables (learning rate, velocity, moments, beta powers) to both programs, and their
/// initialisation to the startup program. Throws pe::error for an unknown `config.kind`.
void append_optimizer(program_builder& builder, const optimizer_config& config,
                      const std::vector<std::pair<std::string, std::string>>& params_grads);

} // namespace pe

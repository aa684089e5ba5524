#include "graph/optimizer.hpp"

#include "core/error.hpp"
#include "graph/validate.hpp"

namespace pe {

namespace {

void no_state(program_builder&, const optimizer_config&, optimizer_update&) {}

void momentum_state(program_builder& builder, const optimizer_config& config, optimizer_update& u) {
  std::string velocity = builder.constant_state(u.param + "_velocity_0", u.dims, 0.f);
  u.inputs.push_back({"Velocity", {velocity}});
  u.outputs.push_back({"VelocityOut", {velocity}});
  u.attrs.push_back({"mu", config.momentum});
  u.attrs.push_back({"use_nesterov", config.nesterov});
}

void adam_state(program_builder& builder, const optimizer_config& config, optimizer_update& u) {
  // Paddle starts the beta powers at beta (not 1): the first step divides by 1 - beta.
  std::string m1 = builder.constant_state(u.param + "_moment1_0", u.dims, 0.f);
  std::string m2 = builder.constant_state(u.param + "_moment2_0", u.dims, 0.f);
  std::string b1 = builder.constant_state(u.param + "_beta1_pow_acc_0", {1}, config.beta1);
  std::string b2 = builder.constant_state(u.param + "_beta2_pow_acc_0", {1}, config.beta2);
  u.inputs.insert(u.inputs.end(), {{"Moment1", {m1}}, {"Moment2", {m2}}, {"Beta1Pow", {b1}},
                                   {"Beta2Pow", {b2}}});
  u.outputs.insert(u.outputs.end(), {{"Moment1Out", {m1}}, {"Moment2Out", {m2}},
                                     {"Beta1PowOut", {b1}}, {"Beta2PowOut", {b2}}});
  u.attrs.insert(u.attrs.end(), {{"beta1", config.beta1}, {"beta2", config.beta2},
                                 {"epsilon", config.epsilon}});
}

} // namespace

const std::vector<optimizer_kind>& optimizer_kinds() {
  static const std::vector<optimizer_kind> kinds = {
      {"sgd", 0.1, "plain gradient descent", no_state},
      {"momentum", 0.01, "mu 0.9", momentum_state},
      {"adam", 0.001, "beta1 0.9, beta2 0.999, epsilon 1e-8", adam_state},
  };
  return kinds;
}

const optimizer_kind& find_optimizer(const std::string& name) {
  std::string names;
  const auto& kinds = optimizer_kinds();
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i].name == name) return kinds[i];
    names += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + kinds[i].name;
  }
  throw error("unknown optimizer '" + name + "' (" + names + ")");
}

void append_optimizer(program_builder& builder, const optimizer_config& config,
                      const std::vector<std::pair<std::string, std::string>>& params_grads) {
  const optimizer_kind& kind = find_optimizer(config.kind);
  std::string lr = builder.constant_state(builder.unique_name("learning_rate"), {1},
                                          config.learning_rate);
  var_table vars = tensor_vars(builder.main_block());
  for (const auto& [param, grad] : params_grads) {
    optimizer_update u{param, vars.at(param).dims,
                       {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {lr}}},
                       {{"ParamOut", {param}}},
                       {{"op_role_var", std::vector<std::string>{param, grad}}}};
    kind.add_state(builder, config, u);
    builder.append_op(kind.name, u.inputs, u.outputs, u.attrs, op_role::optimize);
  }
}

} // namespace pe

#include "graph/optimizer.hpp"

#include "core/error.hpp"
#include "graph/validate.hpp"

namespace pe {

void append_optimizer(program_builder& builder, const optimizer_config& config,
                      const std::vector<std::pair<std::string, std::string>>& params_grads) {
  const std::string& kind = config.kind;
  if (kind != "sgd" && kind != "momentum" && kind != "adam")
    throw error("unknown optimizer '" + kind + "' (sgd, momentum or adam)");
  std::string lr = builder.constant_state(builder.unique_name("learning_rate"), {1},
                                          config.learning_rate);
  var_table vars = tensor_vars(builder.main_block());
  for (const auto& [param, grad] : params_grads) {
    const shape_t& dims = vars.at(param).dims;
    std::vector<std::pair<std::string, attribute>> attrs = {
        {"op_role_var", std::vector<std::string>{param, grad}}};
    slot_args inputs = {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {lr}}};
    slot_args outputs = {{"ParamOut", {param}}};
    if (kind == "momentum") {
      std::string velocity = builder.constant_state(param + "_velocity_0", dims, 0.f);
      inputs.push_back({"Velocity", {velocity}});
      outputs.push_back({"VelocityOut", {velocity}});
      attrs.push_back({"mu", config.momentum});
      attrs.push_back({"use_nesterov", config.nesterov});
    } else if (kind == "adam") {
      // Paddle starts the beta powers at beta (not 1): the first step divides by 1 - beta.
      std::string m1 = builder.constant_state(param + "_moment1_0", dims, 0.f);
      std::string m2 = builder.constant_state(param + "_moment2_0", dims, 0.f);
      std::string b1 = builder.constant_state(param + "_beta1_pow_acc_0", {1}, config.beta1);
      std::string b2 = builder.constant_state(param + "_beta2_pow_acc_0", {1}, config.beta2);
      inputs.insert(inputs.end(), {{"Moment1", {m1}}, {"Moment2", {m2}}, {"Beta1Pow", {b1}},
                                   {"Beta2Pow", {b2}}});
      outputs.insert(outputs.end(), {{"Moment1Out", {m1}}, {"Moment2Out", {m2}},
                                     {"Beta1PowOut", {b1}}, {"Beta2PowOut", {b2}}});
      attrs.insert(attrs.end(), {{"beta1", config.beta1}, {"beta2", config.beta2},
                                 {"epsilon", config.epsilon}});
    }
    builder.append_op(kind, inputs, outputs, attrs, op_role::optimize);
  }
}

} // namespace pe

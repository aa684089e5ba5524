#include "apps/run/model.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "graph/program_info.hpp"
#include "graph/program_io.hpp"

namespace pe {

namespace {

const proto::VarDesc* find_var(const proto::ProgramDesc& program, const std::string& name) {
  for (const auto& var : program.blocks(0).vars())
    if (var.name() == name)
      return &var;
  return nullptr;
}

/// Sets `m.image` and `m.label` from the program's feeds: one FP32 and one INT64 tensor.
void assign_feeds(model_programs& m, const std::vector<std::string>& feeds,
                  const std::string& path) {
  std::vector<std::string> images, labels;
  std::string found;
  for (const auto& name : feeds) {
    const auto* var = find_var(m.main, name);
    bool is_tensor = var && var->type().has_lod_tensor();
    auto type = is_tensor ? static_cast<dtype>(var->type().lod_tensor().tensor().data_type())
                          : dtype::boolean;
    found += (found.empty() ? "" : ", ") + name + " (" +
             (is_tensor ? to_string(type) : std::string("not a declared tensor")) + ")";
    if (is_tensor && type == dtype::fp32)
      images.push_back(name);
    else if (is_tensor && type == dtype::int64)
      labels.push_back(name);
  }
  if (feeds.size() != 2 || images.size() != 1 || labels.size() != 1)
    throw error(path + ": expected one FP32 image feed and one INT64 label feed, found " +
                (found.empty() ? "none" : found));
  m.image = images[0];
  m.label = labels[0];
}

model_programs load_model(const run_options& o) {
  model_programs m;
  m.main = load_program(o.model);
  m.startup = load_program(o.startup);
  assign_seeds(m.startup, o.seed);
  assign_seeds(m.main, o.seed); // dropout masks
  auto roles = analyze_program(m.main);
  if (roles.loss.empty())
    throw error(o.model +
                ": no loss found (no op has op_role Backward|Loss); is it a training program?");
  m.loss = roles.loss;
  assign_feeds(m, roles.feeds, o.model);
  if (o.eval) {
    m.test = clone_for_test(m.main, m.label);
    m.accuracy = analyze_program(m.test).accuracy;
    if (m.accuracy.empty())
      throw error(o.model +
                  ": --eval needs an accuracy op or a softmax_with_cross_entropy to add one to");
  }
  return m;
}

} // namespace

model_programs prepare_model(const run_options& o, std::int64_t data_width) {
  if (!o.builtin_model())
    return load_model(o);
  if (o.model == "cnn") {
    cnn_config config;
    if (data_width != config.image_side * config.image_side)
      throw error("--model cnn trains on 28x28 images (width 784); the data has width " +
                  std::to_string(data_width));
    if (!o.hidden.empty()) config.fc = o.hidden;
    config.optimizer = o.optimizer;
    config.learning_rate = static_cast<float>(o.learning_rate);
    config.seed = o.seed;
    return build_cnn(config);
  }
  mlp_config config;
  config.input_width = static_cast<int>(data_width);
  if (!o.hidden.empty()) config.hidden = o.hidden;
  config.optimizer = o.optimizer;
  config.learning_rate = static_cast<float>(o.learning_rate);
  config.seed = o.seed;
  return build_mlp(config);
}

} // namespace pe

#include "apps/run/model.hpp"

#include "core/error.hpp"
#include "graph/program_info.hpp"
#include "graph/program_io.hpp"

namespace pe {

namespace {

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
  if (roles.feeds.empty())
    throw error(o.model + ": the program has no feeds (no variable is read before an op "
                "writes it, nor fed by a feed op); training needs data to feed");
  // Its feeds are its data inputs, whatever their names and dtypes (fit_to_program checks
  // them against the data); the label is what an accuracy added for --eval compares with.
  m.label = roles.label;
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

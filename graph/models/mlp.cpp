#include "graph/models/mlp.hpp"

#include "devices/error.hpp"
#include "graph/backward.hpp"
#include "graph/builder.hpp"
#include "graph/optimizer.hpp"

namespace pe {

model_programs build_mlp(const mlp_config& config) {
  if (config.input_width <= 0) throw error("mlp: input width must be positive");
  if (config.classes <= 1) throw error("mlp: at least two classes are needed");
  for (int width : config.hidden)
    if (width <= 0) throw error("mlp: hidden widths must be positive, got " + std::to_string(width));

  model_programs m;
  program_builder b(m.main, m.startup, config.seed);
  m.image = b.data("image", {-1, config.input_width}, dtype::fp32);
  m.label = b.data("label", {-1, 1}, dtype::int64);
  std::string h = m.image;
  for (int width : config.hidden) h = b.fc(h, width, "relu");
  std::string logits = b.fc(h, config.classes, "");
  auto [softmax, loss] = b.softmax_with_cross_entropy(logits, m.label);
  m.loss = b.mean(loss);
  m.accuracy = b.accuracy(softmax, m.label);
  m.test = m.main; // Paddle's clone(for_test=True): the forward part only

  auto params_grads = append_backward(m.main, m.loss);
  optimizer_config opt;
  opt.kind = config.optimizer;
  opt.learning_rate = config.learning_rate;
  opt.momentum = config.momentum;
  append_optimizer(b, opt, params_grads);
  return m;
}

} // namespace pe

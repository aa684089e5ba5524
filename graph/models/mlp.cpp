#include "graph/models/mlp.hpp"

#include "core/error.hpp"
#include "graph/builder.hpp"
#include "graph/models/classifier.hpp"

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
  finish_classifier(b, m, b.fc(h, config.classes, ""), config.optimizer, config.learning_rate,
                    config.momentum);
  return m;
}

} // namespace pe

#include "graph/models/cnn.hpp"

#include "core/error.hpp"
#include "graph/builder.hpp"
#include "graph/models/classifier.hpp"

namespace pe {

model_programs build_cnn(const cnn_config& config) {
  if (config.image_side < 4) throw error("cnn: images must be at least 4x4");
  if (config.classes <= 1) throw error("cnn: at least two classes are needed");
  for (int width : config.channels)
    if (width <= 0) throw error("cnn: channel counts must be positive, got " + std::to_string(width));
  for (int width : config.fc)
    if (width <= 0) throw error("cnn: fc widths must be positive, got " + std::to_string(width));

  model_programs m;
  program_builder b(m.main, m.startup, config.seed);
  m.image = b.data("image", {-1, 1, config.image_side, config.image_side}, dtype::fp32);
  m.label = b.data("label", {-1, 1}, dtype::int64);
  std::string h = m.image;
  for (int channels : config.channels) {
    h = b.conv2d(h, channels, 5);
    h = b.batch_norm(h, "relu");
    h = b.pool2d(h, "max", 2, 2);
  }
  for (int width : config.fc) h = b.fc(h, width, "relu");
  finish_classifier(b, m, b.fc(h, config.classes, ""), config.optimizer, config.learning_rate,
                    config.momentum);
  return m;
}

} // namespace pe

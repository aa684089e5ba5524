#include "tests/support/batches.hpp"

#include <algorithm>

#include "graph/models/cnn.hpp"
#include "tests/support/grad_check.hpp"

namespace pe::testing {

labelled_batch argmax_batch(std::int64_t n, std::int64_t width, std::int64_t classes,
                            std::uint64_t seed) {
  labelled_batch b{random_tensor({n, width}, seed), tensor(dtype::int64, {n, 1})};
  auto x = b.image.values<float>();
  auto y = b.label.values<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < classes; ++c)
      if (x[i * width + c] > x[i * width + best]) best = c;
    y[i] = best;
  }
  return b;
}

model_programs argmax_mlp(const std::string& optimizer, float learning_rate, std::uint64_t seed) {
  mlp_config c;
  c.input_width = 16;
  c.hidden = {24, 12};
  c.classes = 4;
  c.optimizer = optimizer;
  c.learning_rate = learning_rate;
  c.seed = seed;
  return build_mlp(c);
}

feed_map argmax_feed(const model_programs& m, std::int64_t n, std::uint64_t seed) {
  auto b = argmax_batch(n, 16, 4, seed);
  return {{m.image, b.image}, {m.label, b.label}};
}

feed_map rows_of(const feed_map& feeds, std::int64_t first, std::int64_t count) {
  feed_map out;
  for (const auto& [name, value] : feeds) out[name] = value.slice(first, first + count);
  return out;
}

namespace {
constexpr int small_side = 8, small_classes = 4;
} // namespace

model_programs small_cnn() {
  cnn_config c;
  c.image_side = small_side;
  c.channels = {4, 8};
  c.fc = {16};
  c.classes = small_classes;
  c.seed = 5;
  return build_cnn(c);
}

feed_map small_cnn_feed(const model_programs& m, std::uint64_t seed) {
  auto b = argmax_batch(16, small_side * small_side, small_classes, seed);
  tensor image(dtype::fp32, {16, 1, small_side, small_side});
  std::copy_n(b.image.values<float>().begin(), image.numel(), image.values<float>().begin());
  return {{m.image, image}, {m.label, b.label}};
}

} // namespace pe::testing

#include "data/synthetic.hpp"

#include <random>
#include <vector>

namespace pe {

namespace {

dataset draw_samples(const std::vector<float>& prototypes, const synthetic_config& c,
                     std::int64_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int64_t> pick(0, c.classes - 1);
  std::normal_distribution<float> noise(0.f, c.noise);
  std::vector<float> images(static_cast<std::size_t>(count * c.width));
  std::vector<std::int64_t> labels(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    auto label = pick(rng);
    labels[i] = label;
    const float* prototype = prototypes.data() + label * c.width;
    float* image = images.data() + i * c.width;
    for (std::int64_t j = 0; j < c.width; ++j)
      image[j] = prototype[j] + noise(rng);
  }
  return dataset({{image_feed, tensor::from_vector(images, {count, c.width})},
                  {label_feed, tensor::from_vector(labels, {count, 1})}});
}

} // namespace

data_splits make_synthetic(const synthetic_config& c) {
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<float> element(0.f, c.prototype_scale);
  std::vector<float> prototypes(static_cast<std::size_t>(c.classes * c.width));
  for (auto& x : prototypes)
    x = element(rng);
  auto train = draw_samples(prototypes, c, c.train_size, rng);
  auto test = draw_samples(prototypes, c, c.test_size, rng);
  return {std::move(train), std::move(test)};
}

} // namespace pe

#include "bench/training.hpp"

#include <random>
#include <utility>

#include "actors/parallel_executor.hpp"

namespace pe::bench {

feed_map random_batch(const model_programs& m, const std::vector<std::int64_t>& image_shape,
                      std::int64_t classes) {
  std::mt19937 generator(7);
  tensor image(dtype::fp32, image_shape);
  std::uniform_real_distribution<float> feature(-1.f, 1.f);
  for (float& x : image.values<float>()) x = feature(generator);
  tensor label(dtype::int64, {image_shape.at(0), 1});
  std::uniform_int_distribution<std::int64_t> category(0, classes - 1);
  for (std::int64_t& y : label.values<std::int64_t>()) y = category(generator);
  return {{m.image, image}, {m.label, label}};
}

std::vector<place> cpu_places(int places) {
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::cpu(p));
  return where;
}

void time_actor_training(benchmark::State& state, const model_programs& m,
                         const std::vector<place>& where, const feed_map& feeds,
                         std::int64_t batch, int warmup_steps, execution_strategy exec,
                         build_strategy build) {
  parallel_executor exe(where, m.startup, m.main, build, std::move(exec));
  for (int i = 0; i < warmup_steps; ++i) exe.run(feeds, {m.loss});
  for (auto _ : state) exe.run(feeds, {m.loss});
  exe.finish(); // the last step's tail (overlap_steps): its failure fails the benchmark
  state.SetItemsProcessed(state.iterations() * batch);
}

} // namespace pe::bench

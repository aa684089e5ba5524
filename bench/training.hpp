#pragma once

#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include "actors/parallel_executor.hpp"
#include "core/place.hpp"
#include "graph/exec/feed_check.hpp"
#include "graph/models/mlp.hpp"

namespace pe::bench {

/// The training benchmarks' one fixed batch (training_bench, cnn_bench, gpu_bench): fp32
/// features of `image_shape` (its first dimension is the rows) uniform in [-1, 1), then int64
/// labels [rows, 1] uniform in [0, classes), all from one generator seeded 7, so every run
/// feeds the same numbers. Keyed by m.image and m.label.
feed_map random_batch(const model_programs& m, const std::vector<std::int64_t>& image_shape,
                      std::int64_t classes);

/// cpu:0 ... cpu:places-1, one place per device thread.
std::vector<place> cpu_places(int places);

/// Times one training step per iteration of the actor executor on `where` (feed `feeds`,
/// fetch m.loss) after `warmup_steps` untimed steps (the first builds the graph and spawns
/// the actors), counting `batch` samples per step as items processed. `exec`: the
/// executor's strategy (its defaults unless given).
void time_actor_training(benchmark::State& state, const model_programs& m,
                         const std::vector<place>& where, const feed_map& feeds,
                         std::int64_t batch, int warmup_steps = 1, execution_strategy exec = {},
                         build_strategy build = {});

} // namespace pe::bench

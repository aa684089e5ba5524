#pragma once

#include <cstdint>

#include "apps/run/options.hpp"
#include "graph/models/cnn.hpp"
#include "graph/models/mlp.hpp"

namespace pe {

/// The programs a run executes and the names it feeds and fetches: the built-in MLP with
/// input width `data_width`, the built-in CNN (`data_width` must be 28 * 28), or the
/// --model/--startup programs, seeded with --seed (their
/// feeds, any number of any names and dtypes, are checked against the data by
/// fit_to_program, apps/run/model_data.hpp; `image` stays empty and `label` is the Label
/// of its softmax_with_cross_entropy, if any). The test program and accuracy name are
/// filled only when `options.eval`.
///
/// Throws pe::error naming the file when a program cannot be loaded, has no loss, or has no
/// accuracy to evaluate.
model_programs prepare_model(const run_options& options, std::int64_t data_width);

} // namespace pe

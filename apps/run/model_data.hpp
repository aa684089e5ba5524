#pragma once

#include "apps/run/options.hpp"
#include "data/data_format.hpp"
#include "graph/models/mlp.hpp"

namespace pe {

/// A run's programs and its data, fitted to each other.
struct model_and_data {
  model_programs model;
  data_splits data;
};

/// Makes every split of `data` feed the program's data inputs (its feeds, analyze_program)
/// as its block 0 declares them, each split then holding exactly those feeds by the
/// program's names. A format that reads feeds by name (npy:DIR) has read every one of
/// them; a format with feeds of its own (synthetic, idx: image FP32, label INT64) feeds
/// each to the program's one feed of the same dtype, and the program must have no other.
/// The dtypes must be equal, and each row's shape (the dims after dim 0) must match the
/// declared non-batch dims where these are known; data of a format with feeds of its own
/// whose rows have the element count of a fully known declared row shape are reshaped to
/// it, so [n, 784] pixels feed a [-1, 1, 28, 28] image. Throws pe::error naming the
/// variable and the file (npy:DIR) or the data source, and for a dtype both dtypes.
void fit_to_program(data_splits& data, const proto::ProgramDesc& program, const data_spec& spec);

/// Loads the run's data (--data) and programs (--model) and fits them together. The built-in
/// model's input width follows the data, so the data comes first; a loaded program comes
/// first, since npy:DIR names its files after the program's feeds.
model_and_data load_model_and_data(const run_options& options);

} // namespace pe

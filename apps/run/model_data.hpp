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

/// Makes every split of `data` fit the program's image and label variables `feeds` as its
/// block 0 declares them: the dtypes must be equal, and each row's shape (the dims after
/// dim 0) must match the declared non-batch dims where these are known. Data of a format
/// whose files are not named by feed (synthetic, idx) whose image rows have the element
/// count of a fully known declared row shape are reshaped to it, so [n, 784] pixels feed a
/// [-1, 1, 28, 28] image. Throws pe::error naming the variable and the file (npy:DIR) or
/// the data source.
void fit_to_program(data_splits& data, const proto::ProgramDesc& program,
                    const feed_names& feeds, const data_spec& spec);

/// Loads the run's data (--data) and programs (--model) and fits them together. The built-in
/// model's input width follows the data, so the data comes first; a loaded program comes
/// first, since npy:DIR names its files after the program's feeds.
model_and_data load_model_and_data(const run_options& options);

} // namespace pe

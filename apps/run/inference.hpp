#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "apps/run/options.hpp"
#include "graph/proto.hpp"

namespace pe {

/// An inference program as save_inference_model writes it (.pdmodel): its feed ops name the
/// inputs and its fetch ops the outputs, each in `col` order.
struct inference_model {
  proto::ProgramDesc program;      ///< without the feed and fetch ops, ready for an executor
  std::vector<std::string> feeds;  ///< by feed col
  std::vector<std::string> fetches; ///< by fetch col
};

/// Reads the inference program at `path`. Throws pe::error naming the file when it cannot be
/// loaded or has no feed or no fetch op.
inference_model load_inference_model(const std::string& path);

/// pe-actor-run --infer: loads options.model and its parameters options.params, reads
/// DIR/<feed>.npy for every feed (options.data is npy:DIR), runs the program on
/// options.batch_size rows at a time (the last batch may be partial) with the chosen executor
/// over options.places, and writes every fetch target, all rows in order, to
/// options.output/<fetch name>.npy. Throws pe::error for a missing feed file, a feed of the
/// wrong dtype or shape, feeds that disagree on their row count, or bad parameters.
void run_inference(const run_options& options, std::ostream& out);

} // namespace pe

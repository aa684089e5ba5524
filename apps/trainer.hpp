#pragma once

#include <iosfwd>

#include "apps/options.hpp"

namespace pe {

/// Runs one pe-actor-run session: loads the data, prepares the programs (saving them with
/// --save-program), initialises the parameters with the startup program, trains the main
/// program with the chosen executor on the global batches (writing --dot after step 1),
/// evaluates with --eval, and writes --metrics.
/// Progress lines and the summary go to `out`. Throws pe::error (or another
/// std::exception) on any failure; nothing is half-reported as success.
void run_training(const run_options& options, std::ostream& out);

} // namespace pe

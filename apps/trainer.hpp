#pragma once

#include <iosfwd>

#include "apps/options.hpp"

namespace pe {

/// pe-actor-run's exit status when --check-hazards found violations.
inline constexpr int hazards_found = 3;

/// Runs one pe-actor-run session: loads the data, prepares the programs (saving them with
/// --save-program), initialises the parameters with the startup program (then --load-params
/// replaces the persistables it holds; a --save-params directory is checked writable before
/// any of this), trains the main
/// program with the chosen executor on the global batches (writing --dot after step 1,
/// recording the steps' op firings for --trace and --check-hazards), writes --trace and
/// checks hazards, writes --save-params, evaluates with --eval, and writes --metrics.
/// Progress lines and the summary go to `out`. Returns the exit status: 0, or
/// hazards_found. Throws pe::error (or another std::exception) on any failure; nothing is
/// half-reported as success.
int run_training(const run_options& options, std::ostream& out);

} // namespace pe

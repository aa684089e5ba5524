#pragma once

#include <iosfwd>

#include "apps/run/options.hpp"
#include "apps/run/progress_reporter.hpp"

namespace pe {

/// pe-actor-run's exit status when --check-hazards found violations.
inline constexpr int hazards_found = 3;

/// Runs one pe-actor-run session: loads the data, prepares the programs (saving them with
/// --save-program), initialises the parameters with the startup program (then --load-params
/// replaces the persistables it holds; from a checkpoint it also restores the step and the
/// data position, and training goes on from the next step), trains the main program with
/// the chosen executor on the global batches (writing --dot after the first step, recording
/// the steps' op firings for --trace and --check-hazards, writing the --save-params
/// checkpoint every --save-every steps), writes --trace and checks hazards, writes the
/// --save-params checkpoint, evaluates with --eval, and writes --metrics. The first
/// SIGINT/SIGTERM ends training at the next step boundary: the rest runs but --eval, and the
/// metrics say "interrupted"; a second one ends the process at once (see signals.hpp). A
/// non-finite (NaN or infinite) loss ends training after its step: the metrics are written
/// (with "nonfinite_loss_step"), no checkpoint and no eval, then pe::error names the step.
/// Progress (see progress_reporter: one line rewritten in place when `display` says `out` is
/// a terminal, else plain lines every --log-every steps or every 10 s) and the summary go to
/// `out`. The outputs should have been checked with check_outputs first. Returns the exit
/// status: 0, hazards_found, or 128 + the signal that interrupted training. Throws pe::error
/// (or another std::exception) on any failure; nothing is half-reported as success.
int run_training(const run_options& options, std::ostream& out,
                 const progress_display& display = {});

} // namespace pe

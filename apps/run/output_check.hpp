#pragma once

#include <string>

#include "apps/run/options.hpp"

namespace pe {

/// Checks, before any data is loaded, that every output a run was asked for can be written,
/// so that a run never trains for an hour and then fails on its last line: the files
/// --metrics, --trace and --dot (the directory exists and takes a new file, or the file is
/// writable; nothing is created), the directories --save-program and --output (created, a
/// probe file written and removed) and --save-params (see check_checkpoint_dir). Throws
/// pe::error naming the flag and the path.
void check_outputs(const run_options& options);

/// `path` can be written by the file flag `flag` ("--metrics"); creates nothing.
void check_output_file(const std::string& flag, const std::string& path);

/// Creates the directory `dir` of `flag` and checks that a file can be written into it.
void check_output_dir(const std::string& flag, const std::string& dir);

} // namespace pe

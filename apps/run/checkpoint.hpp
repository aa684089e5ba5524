#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/run/options.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/proto.hpp"

namespace pe {

/// A checkpoint is a --save-params directory: every persistable of the main program
/// (parameters, learning rate, optimizer moments and beta powers) in Paddle's one-file-per-
/// variable format, so Paddle's load_vars still reads it, plus checkpoint.json, which says
/// how far training got and which run wrote it. It is written into a staging directory next
/// to DIR and swapped in with one rename, so a save that is interrupted (a second Ctrl-C,
/// kill -9) or fails part-way (a full disk) leaves the previous checkpoint whole, never a
/// mix. checkpoint.json records every variable file's size and SHA-256, read back from the
/// disk before the swap, and a load checks them: a file altered, truncated or missing after
/// the save is refused by name. (The digests catch damage and mistakes; whoever can rewrite
/// checkpoint.json as well can forge a checkpoint.)

/// The name of the record in a checkpoint directory.
inline constexpr const char* checkpoint_file_name = "checkpoint.json";

/// What checkpoint.json records.
struct checkpoint_record {
  std::int64_t step = 0;               ///< training steps done, also batches served
  std::int64_t epochs_completed = 0;   ///< for people: where `step` is in the data
  std::int64_t batches_into_epoch = 0; ///< batches of the current epoch served
  nlohmann::json run;                  ///< resume_identity of the run that wrote it
  /// Each variable file's size and SHA-256 (64 hex digits), by variable name; empty for a
  /// checkpoint written before digests (format 1), which loads unverified.
  std::map<std::string, std::pair<std::uint64_t, std::string>> files{};
};

/// What a resumed run must share with the one that wrote the checkpoint for its steps to
/// continue that run's: the --model (with --hidden, --optimizer and --lr of a built-in
/// one), --batch-size, --seed, --data, --normalize, the training set's size and a hash of
/// the main program. Places, executor and threads may change.
nlohmann::json resume_identity(const run_options& options, const proto::ProgramDesc& main,
                               std::int64_t train_samples);

/// Checks, before training, that the checkpoint directory `dir` of `flag` (--save-params)
/// can be written: creates it, and creates and removes the staging directory next to it
/// (the swap needs its parent writable). Throws pe::error naming the flag and the path.
void check_checkpoint_dir(const std::string& flag, const std::string& dir);

/// Checks that `dir` holds nothing but a checkpoint of a program with these `variables`
/// (or nothing at all), since a save replaces the whole directory: a stray file would be
/// lost. Throws pe::error naming the flag, the directory and the first stray entry.
void check_checkpoint_target(const std::string& flag, const std::string& dir,
                             const std::vector<std::string>& variables);

/// Writes `values` and `record` as the checkpoint `dir`, replacing the one there at once
/// (see above). Throws pe::error naming the path that cannot be written.
void write_checkpoint(const std::string& dir, const param_map& values,
                      const checkpoint_record& record);

/// The record of the checkpoint at `path`, or nullopt when `path` is not a directory holding
/// checkpoint.json (parameters alone). Throws pe::error for a record that cannot be read.
std::optional<checkpoint_record> read_checkpoint(const std::string& path);

/// Checks the files of the checkpoint at `path` against `saved`'s digests before anything is
/// loaded: every variable in `variables` must be listed, present, of its recorded size and
/// SHA-256. Throws pe::error naming --load-params, the file and what differs. Returns false
/// (checking nothing) for a checkpoint without digests.
bool verify_checkpoint_files(const checkpoint_record& saved, const std::string& path,
                             const std::vector<std::string>& variables);

/// Refuses to resume from `saved` (at `path`) a run whose resume_identity `run` differs,
/// with an error naming the first difference and both values.
void check_resumable(const checkpoint_record& saved, const nlohmann::json& run,
                     const std::string& path);

} // namespace pe

#include "apps/run/checkpoint.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include <fcntl.h>

#include "core/error.hpp"
#include "core/json_integer.hpp"
#include "crypto/digest.hpp"
#include "graph/program_io.hpp"

namespace pe {

namespace {

namespace fs = std::filesystem;

/// The identity's entries with the flag that sets each, in the order differences are
/// reported.
const std::pair<const char*, const char*> identity_keys[] = {
  {"model", "--model"},          {"hidden", "--hidden"},   {"optimizer", "--optimizer"},
  {"lr", "--lr"},                {"batch_size", "--batch-size"}, {"seed", "--seed"},
  {"data", "--data"},            {"normalize", "--normalize"},   {"shuffle", "--no-shuffle"},
  {"train_samples", "the training set's size"}, {"program", "the main program's hash"},
};

/// `dir` as an absolute path without a trailing separator.
fs::path normal(const std::string& dir) {
  fs::path path = fs::absolute(dir).lexically_normal();
  return path.has_filename() ? path : path.parent_path();
}

/// The sibling directory a checkpoint of `dir` is written into before it is swapped in.
fs::path staging_of(const fs::path& dir) {
  return dir.parent_path() / ("." + dir.filename().string() + ".partial");
}

/// Makes `staging` the checkpoint `dir` in one step: a rename onto a missing or empty `dir`,
/// else an exchange of the two (renameat2 RENAME_EXCHANGE), after which `staging` holds the
/// old checkpoint and is removed. A file system without the exchange gets two renames.
void publish(const fs::path& staging, const fs::path& dir) {
  std::error_code failure;
  const auto fail = [&](const std::string& why) {
    throw error(dir.string() + ": cannot replace the checkpoint with " + staging.string() +
                ": " + why);
  };
  if (!fs::exists(dir, failure) || fs::is_empty(dir, failure)) {
    fs::rename(staging, dir, failure);
    if (failure)
      fail(failure.message());
    return;
  }
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS)
      fail(std::strerror(errno));
    const fs::path old = dir.parent_path() / ("." + dir.filename().string() + ".old");
    fs::remove_all(old, failure);
    fs::rename(dir, old, failure);
    if (!failure)
      fs::rename(staging, dir, failure);
    if (failure)
      fail(failure.message());
    fs::remove_all(old, failure);
    return;
  }
  fs::remove_all(staging, failure); // the previous checkpoint
}

/// The format written; "pe-actor-run checkpoint 1" (no digests) is still read.
constexpr const char* checkpoint_format = "pe-actor-run checkpoint 2";

nlohmann::json record_json(const checkpoint_record& r) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [name, file] : r.files)
    files[name] = {{"bytes", file.first}, {"sha256", file.second}};
  return {{"format", checkpoint_format},
          {"files", files},
          {"step", r.step},
          {"data_position",
           {{"batches_served", r.step},
            {"epochs_completed", r.epochs_completed},
            {"batches_into_epoch", r.batches_into_epoch}}},
          {"run", r.run}};
}

/// `value` as a flag's argument: strings bare, the rest as JSON.
std::string shown(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

} // namespace

nlohmann::json resume_identity(const run_options& o, const proto::ProgramDesc& main,
                               std::int64_t train_samples) {
  const nlohmann::json config = to_json(o);
  nlohmann::json identity = nlohmann::json::object();
  for (const auto& [key, flag] : identity_keys)
    if (config.contains(key))
      identity[key] = config[key];
  identity["train_samples"] = train_samples;
  identity["program"] = program_fingerprint(main);
  return identity;
}

void check_checkpoint_dir(const std::string& flag, const std::string& dir) {
  const auto fail = [&](const std::string& why) { throw error(flag + " " + dir + ": " + why); };
  std::error_code failure;
  fs::create_directories(dir, failure);
  if (failure)
    fail("cannot create the directory: " + failure.message());
  if (!fs::is_directory(dir, failure))
    fail("not a directory");
  const fs::path staging = staging_of(normal(dir));
  fs::remove_all(staging, failure); // left by a save that was killed
  fs::create_directory(staging, failure);
  if (failure)
    fail("cannot create " + staging.string() + ", where checkpoints are written before they "
         "replace the directory: " + failure.message());
  fs::remove(staging, failure);
}

void check_checkpoint_target(const std::string& flag, const std::string& dir,
                             const std::vector<std::string>& variables) {
  std::set<std::string> ours{checkpoint_file_name};
  for (const auto& name : variables)
    ours.insert(fs::path(name).begin()->string()); // a name with '/' is a subdirectory
  std::error_code failure;
  if (!fs::is_directory(dir, failure))
    return;
  for (const auto& entry : fs::directory_iterator(dir, failure))
    if (!ours.contains(entry.path().filename().string()))
      throw error(flag + " " + dir + " holds " + entry.path().filename().string() +
                  ", which is not a variable of this program nor " + checkpoint_file_name +
                  "; a checkpoint replaces the whole directory, so give a new or empty one "
                  "(or one holding an earlier checkpoint)");
}

void write_checkpoint(const std::string& dir, const param_map& values,
                      const checkpoint_record& record) {
  std::vector<std::string> names;
  for (const auto& entry : values)
    names.push_back(entry.first);
  check_checkpoint_target("--save-params", dir, names);
  const fs::path target = normal(dir), staging = staging_of(target);
  std::error_code failure;
  fs::remove_all(staging, failure);
  try {
    save_params(staging.string(), values);
    checkpoint_record digested = record;
    for (const auto& name : names) {
      const fs::path file = staging / name;
      digested.files[name] = {fs::file_size(file), sha256_file_hex(file.string())};
    }
    const fs::path file = staging / checkpoint_file_name;
    std::ofstream out(file);
    out << record_json(digested).dump(2) << '\n';
    if (!out.flush())
      throw error(file.string() + ": cannot write the checkpoint record: " + std::strerror(errno));
  } catch (const std::exception& e) {
    fs::remove_all(staging, failure);
    const bool previous = fs::exists(target / checkpoint_file_name, failure);
    throw error("--save-params " + dir + ": the checkpoint could not be written (" + e.what() +
                "); " + (previous ? "the previous checkpoint there is intact"
                                  : "nothing was there before, and nothing is now"));
  }
  publish(staging, target);
}

std::optional<checkpoint_record> read_checkpoint(const std::string& path) {
  const fs::path file = fs::path(path) / checkpoint_file_name;
  std::error_code failure;
  if (!fs::is_directory(path, failure) || !fs::exists(file, failure))
    return std::nullopt;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto json = nlohmann::json::parse(text.str());
    checkpoint_record r;
    r.step = json_integer<std::int64_t>(json.at("step"), "\"step\"");
    const auto& position = json.at("data_position");
    r.epochs_completed = json_integer<std::int64_t>(position.at("epochs_completed"), "\"epochs_completed\"");
    r.batches_into_epoch = json_integer<std::int64_t>(position.at("batches_into_epoch"), "\"batches_into_epoch\"");
    r.run = json.at("run");
    if (r.step < 0 || !r.run.is_object())
      throw error("a negative step or no run");
    if (json.contains("files"))
      for (const auto& [name, file] : json.at("files").items()) {
        const std::string digest = file.at("sha256").get<std::string>();
        if (digest.size() != 64 || digest.find_first_not_of("0123456789abcdef") != std::string::npos)
          throw error("the digest of " + name + " is not 64 hex digits");
        r.files[name] = {json_integer<std::uint64_t>(file.at("bytes"), "the bytes of " + name), digest};
      }
    else if (json.value("format", "") != "pe-actor-run checkpoint 1")
      throw error("no \"files\" (digests) in a checkpoint of format " + json.value("format", "(none)"));
    return r;
  } catch (const std::exception& e) {
    throw error(file.string() + ": not a checkpoint record pe-actor-run can read: " + e.what());
  }
}

bool verify_checkpoint_files(const checkpoint_record& saved, const std::string& path,
                             const std::vector<std::string>& variables) {
  if (saved.files.empty())
    return false;
  const auto refuse = [&](const std::string& name, const std::string& what) {
    throw error("--load-params " + path + ": " + (fs::path(path) / name).string() + " " + what +
                "; the checkpoint is not whole, so nothing was loaded");
  };
  for (const auto& name : variables) {
    const auto recorded = saved.files.find(name);
    const fs::path file = fs::path(path) / name;
    std::error_code failure;
    const bool present = fs::is_regular_file(file, failure);
    if (recorded == saved.files.end()) {
      if (present)
        refuse(name, "is not among the files " + std::string(checkpoint_file_name) +
                         " records (added after the save?)");
      continue; // absent and unrecorded: load_params says what is missing
    }
    if (!present)
      refuse(name, "is missing (" + std::string(checkpoint_file_name) + " records " +
                       std::to_string(recorded->second.first) + " bytes)");
    const auto bytes = fs::file_size(file, failure);
    if (failure || bytes != recorded->second.first)
      refuse(name, "has " + std::to_string(bytes) + " bytes where " + checkpoint_file_name +
                       " records " + std::to_string(recorded->second.first) + " (truncated or replaced)");
    const std::string digest = sha256_file_hex(file.string());
    if (digest != recorded->second.second)
      refuse(name, "was altered after the save: its SHA-256 is " + digest + ", " +
                       checkpoint_file_name + " records " + recorded->second.second);
  }
  return true;
}

void check_resumable(const checkpoint_record& saved, const nlohmann::json& run,
                     const std::string& path) {
  for (const auto& [key, flag] : identity_keys) {
    const auto theirs = saved.run.contains(key) ? saved.run.at(key) : nlohmann::json();
    const auto ours = run.contains(key) ? run.at(key) : nlohmann::json();
    if (theirs == ours)
      continue;
    const auto value = [](const nlohmann::json& v) { return v.is_null() ? "none" : shown(v); };
    throw error("--load-params " + path + ": the checkpoint was written with " + flag + " " +
                value(theirs) + ", this run has " + value(ours) + "; a resumed run needs the "
                "same model, batch size, seed and data (to start from its parameters alone, "
                "load a copy without " + checkpoint_file_name + ")");
  }
}

} // namespace pe

// Fuzz target: checkpoint.json, as --load-params reads it (read_checkpoint) and checks the
// files it lists (verify_checkpoint_files, in a directory holding only the record). A record
// it accepts has a step >= 0, a run object and digests of 64 hex digits; every refusal is a
// pe::error, never a crash; no listed file exists, so a record listing any is refused.
#include <filesystem>
#include <fstream>
#include <string>

#include "apps/run/checkpoint.hpp"
#include "core/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  const fs::path dir = pe::fuzz::scratch_path(".checkpoint");
  fs::create_directories(dir);
  {
    std::ofstream out(dir / pe::checkpoint_file_name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  std::optional<pe::checkpoint_record> record;
  try {
    record = pe::read_checkpoint(dir.string());
  } catch (const pe::error&) {
    return 0;
  }
  pe::fuzz::require(record.has_value(), "a directory with checkpoint.json read as no checkpoint");
  pe::fuzz::require(record->step >= 0 && record->run.is_object(), "an accepted record has a negative step or no run");
  std::vector<std::string> names;
  for (const auto& [name, file] : record->files) {
    pe::fuzz::require(file.second.size() == 64 &&
                          file.second.find_first_not_of("0123456789abcdef") == std::string::npos,
                      "an accepted digest is not 64 hex digits");
    names.push_back(name);
  }
  // Names that escape the directory or name the record itself must not crash the check.
  bool refused = false;
  try {
    pe::verify_checkpoint_files(*record, dir.string(), names);
  } catch (const pe::error&) {
    refused = true;
  }
  bool any_listed_exists = false;
  for (const auto& name : names) {
    std::error_code failure;
    any_listed_exists = any_listed_exists || fs::is_regular_file(dir / name, failure);
  }
  pe::fuzz::require(names.empty() || refused || any_listed_exists,
                    "a record listing files that are not there passed the check");
  return 0;
}

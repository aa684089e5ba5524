#include "apps/run/output_check.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "apps/run/checkpoint.hpp"
#include "core/error.hpp"

namespace pe {

namespace fs = std::filesystem;

void check_output_file(const std::string& flag, const std::string& path) {
  const auto fail = [&](const std::string& why) { throw error(flag + " " + path + ": " + why); };
  std::error_code failure;
  const auto status = fs::status(path, failure);
  if (fs::exists(status)) {
    if (fs::is_directory(status))
      fail("is a directory; expected a file name");
    if (::access(path.c_str(), W_OK) != 0)
      fail(std::string("cannot write the file: ") + std::strerror(errno));
    return;
  }
  const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".")
                                                                : fs::path(path).parent_path();
  const auto parent_status = fs::status(parent, failure);
  if (!fs::exists(parent_status))
    fail("the directory " + parent.string() + " does not exist");
  if (!fs::is_directory(parent_status))
    fail(parent.string() + " is not a directory");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    fail("cannot create a file in " + parent.string() + ": " + std::strerror(errno));
}

void check_output_dir(const std::string& flag, const std::string& dir) {
  std::error_code failure;
  fs::create_directories(dir, failure);
  if (failure)
    throw error(flag + " " + dir + ": cannot create the directory: " + failure.message());
  const fs::path probe = fs::path(dir) / ".pe-actor-write-check";
  const bool writable = static_cast<bool>(std::ofstream(probe));
  fs::remove(probe, failure);
  if (!writable)
    throw error(flag + " " + dir + ": cannot write into the directory");
}

void check_outputs(const run_options& o) {
  for (const auto& [flag, path] : {std::pair{"--metrics", &o.metrics}, std::pair{"--trace", &o.trace},
                                   std::pair{"--dot", &o.dot}})
    if (!path->empty())
      check_output_file(flag, *path);
  for (const auto& [flag, dir] : {std::pair{"--save-program", &o.save_program},
                                  std::pair{"--output", &o.output}})
    if (!dir->empty())
      check_output_dir(flag, *dir);
  if (!o.save_params.empty())
    check_checkpoint_dir("--save-params", o.save_params);
}

} // namespace pe

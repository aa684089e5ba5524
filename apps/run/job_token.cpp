#include "apps/run/job_token.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

#include "collectives/net/job_admission.hpp"
#include "core/error.hpp"

namespace pe {

namespace {

/// The fewest bytes a token may have: below, guessing it is within reach.
constexpr std::size_t min_token_bytes = 16;

std::string checked(std::string token, const std::string& source) {
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r'))
    token.pop_back();
  if (token.size() < min_token_bytes)
    throw error(source + " holds a job token of " + std::to_string(token.size()) +
                " bytes; give at least " + std::to_string(min_token_bytes) +
                " random ones (e.g. `openssl rand -hex 32 > FILE`)");
  return token;
}

} // namespace

std::string read_job_token(const std::optional<std::string>& file) {
  if (file) {
    const std::string source = "--job-token-file " + *file;
    struct stat info {};
    if (::stat(file->c_str(), &info) != 0)
      throw error(source + ": " + std::strerror(errno));
    if (!S_ISREG(info.st_mode))
      throw error(source + ": not a regular file");
    if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0)
      throw error(source + ": other users may read it (mode " +
                  std::to_string((info.st_mode >> 6) & 7) + std::to_string((info.st_mode >> 3) & 7) +
                  std::to_string(info.st_mode & 7) + "); a secret must be readable by its owner "
                  "alone: chmod 600 " + *file);
    std::ifstream in(*file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in)
      throw error(source + ": cannot read it");
    return checked(text.str(), source);
  }
  const char* value = std::getenv(job_token_variable);
  if (value == nullptr)
    return "";
  return checked(value, std::string("$") + job_token_variable);
}

} // namespace pe

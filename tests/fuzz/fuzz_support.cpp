#include "tests/fuzz/fuzz_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace pe::fuzz {

namespace {

std::string scratch_dir() {
  if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) return tmp;
  return std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
}

/// Every scratch path handed out, removed when the process exits: files, and the directories
/// that a target's code under test made there (a checkpoint is a directory), with their files.
struct scratch_files {
  std::map<std::string, std::string> by_suffix;
  ~scratch_files() {
    std::error_code ignored;
    for (const auto& [suffix, path] : by_suffix) std::filesystem::remove_all(path, ignored);
  }
};

scratch_files& files() {
  static scratch_files all;
  return all;
}

} // namespace

const std::string& scratch_path(const std::string& suffix) {
  auto& paths = files().by_suffix;
  auto it = paths.find(suffix);
  if (it == paths.end())
    it = paths.emplace(suffix, scratch_dir() + "/pe_fuzz_" + std::to_string(::getpid()) + suffix).first;
  return it->second;
}

const std::string& write_scratch(const std::uint8_t* data, std::size_t size, const std::string& suffix) {
  const std::string& path = scratch_path(".in" + suffix);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write the scratch file %s\n", path.c_str());
    std::abort();
  }
  return path;
}

std::uint64_t byte_source::in_range(std::uint64_t low, std::uint64_t high) {
  const std::uint64_t span = high - low;
  std::uint64_t value = 0;
  for (std::uint64_t covered = 0; covered < span && at_ < size_; covered = covered << 8 | 0xff)
    value = value << 8 | data_[at_++];
  return span == UINT64_MAX ? value : low + value % (span + 1);
}

std::int64_t byte_source::in_range_signed(std::int64_t low, std::int64_t high) {
  const auto span = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + in_range(0, span));
}

std::vector<char> byte_source::bytes(std::size_t n) {
  n = std::min(n, remaining());
  std::vector<char> out(data_ + at_, data_ + at_ + n);
  at_ += n;
  return out;
}

void require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
  std::abort();
}

} // namespace pe::fuzz

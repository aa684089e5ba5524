#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pe::fuzz {

/// The readers under test take paths: each input is written to this process's own scratch
/// file (in TMPDIR, /dev/shm when there is none), overwritten by the next input, removed at
/// exit. Returns its path.
const std::string& write_scratch(const std::uint8_t* data, std::size_t size,
                                 const std::string& suffix = "");

/// A scratch path of this process ending in `suffix` (readers' outputs written back for round
/// trips, the seed generator's staging files), removed at exit.
const std::string& scratch_path(const std::string& suffix);

/// Aborts with `what` when `condition` fails: an invariant broken by an input the reader
/// accepted is a finding, just like a crash.
void require(bool condition, const char* what);

/// Reads a target's choices from the front of its input, in order (a seed is easy to write
/// by hand); past the end every value reads as zero.
class byte_source {
 public:
  byte_source(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::size_t remaining() const { return size_ - at_; }

  /// A value in [low, high], from as many bytes as the span needs.
  std::uint64_t in_range(std::uint64_t low, std::uint64_t high);
  std::int64_t in_range_signed(std::int64_t low, std::int64_t high);
  bool flag() { return in_range(0, 1) == 1; }
  /// Up to `n` bytes (fewer at the end of the input).
  std::vector<char> bytes(std::size_t n);
  std::vector<char> rest() { return bytes(remaining()); }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

} // namespace pe::fuzz

#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pe {

/// Cuts one output stream (a rank's stdout or stderr, read in chunks of any size) into whole
/// lines, each starting with a prefix, so that lines of several streams written to one file
/// never mix within a line.
class line_prefixer {
 public:
  /// A line longer than this without a newline is passed on in pieces of this size, so that a
  /// stream without newlines cannot grow the launcher's memory without bound.
  static constexpr std::size_t max_line = 64 * 1024;

  explicit line_prefixer(std::string prefix);

  /// The lines that `chunk` completes (with their beginnings from earlier chunks), each with
  /// the prefix and its '\n'; keeps the unterminated tail for the next call.
  std::string feed(std::string_view chunk);

  /// The unterminated tail as a last line, prefixed and given a '\n'; "" when there is none.
  std::string finish();

 private:
  std::string prefix_;
  std::string partial_;
};

} // namespace pe

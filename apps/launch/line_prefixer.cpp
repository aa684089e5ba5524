#include "apps/launch/line_prefixer.hpp"

#include <utility>

namespace pe {

line_prefixer::line_prefixer(std::string prefix) : prefix_(std::move(prefix)) {}

std::string line_prefixer::feed(std::string_view chunk) {
  std::string lines;
  while (!chunk.empty()) {
    auto newline = chunk.find('\n');
    auto room = max_line - partial_.size();
    if (newline == std::string_view::npos && chunk.size() < room) {
      partial_.append(chunk);
      break;
    }
    // A whole line, or max_line bytes of one.
    auto take = newline == std::string_view::npos || newline >= room ? room : newline + 1;
    lines += prefix_;
    lines += partial_;
    lines.append(chunk.substr(0, take));
    if (lines.back() != '\n')
      lines += '\n';
    partial_.clear();
    chunk.remove_prefix(take);
  }
  return lines;
}

std::string line_prefixer::finish() {
  if (partial_.empty())
    return "";
  auto line = prefix_ + partial_ + '\n';
  partial_.clear();
  return line;
}

} // namespace pe

#pragma once

#include <map>
#include <set>
#include <string_view>
#include <string>

#include "core/tensor.hpp"
#include "graph/op_registry.hpp"
#include "graph/program_info.hpp"
#include "graph/proto.hpp"

namespace pe {

using feed_map = std::map<std::string, tensor, std::less<>>;

/// The data inputs a program needs on every run, with their declared dtype and dims.
class feed_check {
 public:
  /// `declared`: the program's variables after validation (validate_program).
  feed_check(const proto::ProgramDesc& program, const var_table& declared);

  /// Throws pe::error naming the feed when one is missing, unknown, empty, or has a dtype or
  /// shape other than declared (-1 matches any size).
  void check(const feed_map& feeds) const;

  /// Whether some op writes the fed variable `name` (an in-place update): such a feed must be
  /// copied, or the step would write into the caller's tensor.
  bool written(std::string_view name) const { return written_.contains(name); }

 private:
  struct data_var {
    var_info info;
    data_input input;
  };
  std::map<std::string, data_var, std::less<>> data_vars_;
  std::set<std::string, std::less<>> written_;
};

} // namespace pe

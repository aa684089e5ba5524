#pragma once

#include <stdexcept>
#include <string>

namespace pe {

/// The one exception type of the engine. Its message names the problem precisely
/// (op, slot, variable, place) because it is what the user reads.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

} // namespace pe

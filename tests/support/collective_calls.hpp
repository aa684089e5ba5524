#pragma once

#include <cstdint>
#include <string>

#include "collectives/communicator.hpp"

namespace pe::testing {

/// Collective #`sequence` of kind `what`, labelled "test#<sequence>" for the errors to name.
inline collective_call test_call(collective_call::kind what, std::uint64_t sequence, int root = 0) {
  collective_call c;
  c.what = what;
  c.root = root;
  c.sequence = sequence;
  c.label = "test#" + std::to_string(sequence);
  return c;
}

} // namespace pe::testing

#pragma once

#include "graph/models/mlp.hpp"

namespace pe::testing {

/// The built-in MLP at its smallest (6 inputs, 5 hidden units, 3 classes): every op kind
/// of the real model, in programs small enough to edit and check by hand.
inline model_programs tiny_mlp() {
  mlp_config c;
  c.input_width = 6;
  c.hidden = {5};
  c.classes = 3;
  return build_mlp(c);
}

} // namespace pe::testing

#pragma once

#include <cstdint>

#include "core/tensor.hpp"

namespace pe::testing {

/// A learnable classification batch: `n` rows of `width` features uniform in [-1, 1], whose
/// label is the index of the largest of the first `classes` features (a linear layer can
/// learn it). The same seed gives the same batch.
struct labelled_batch {
  tensor image; ///< FP32 [n, width]
  tensor label; ///< INT64 [n, 1]
};
labelled_batch argmax_batch(std::int64_t n, std::int64_t width, std::int64_t classes,
                            std::uint64_t seed);

} // namespace pe::testing

#include "tests/support/batches.hpp"

#include "tests/support/grad_check.hpp"

namespace pe::testing {

labelled_batch argmax_batch(std::int64_t n, std::int64_t width, std::int64_t classes,
                            std::uint64_t seed) {
  labelled_batch b{random_tensor({n, width}, seed), tensor(dtype::int64, {n, 1})};
  auto x = b.image.values<float>();
  auto y = b.label.values<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < classes; ++c)
      if (x[i * width + c] > x[i * width + best]) best = c;
    y[i] = best;
  }
  return b;
}

} // namespace pe::testing

#include "kernels/math_shapes.hpp"

#include <algorithm>

#include "core/checked_math.hpp"

namespace pe {

std::int64_t known_product(const shape_t& dims, std::size_t begin, std::size_t end) {
  const auto first = dims.begin() + static_cast<std::ptrdiff_t>(begin);
  const auto last = dims.begin() + static_cast<std::ptrdiff_t>(end);
  if (std::any_of(first, last, [](std::int64_t d) { return d < 0; })) return -1;
  auto product = checked_product(first, last);
  if (!product) throw error("the element count of dims " + to_string(dims) + " overflows int64");
  return *product;
}

shape_t reduced_dims(const shape_t& x, const std::vector<bool>& reduced, bool keep_dim) {
  shape_t out;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i])
      out.push_back(x[i]);
    else if (keep_dim)
      out.push_back(1);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

std::string to_string(const std::vector<std::int32_t>& values) {
  return to_string(shape_t(values.begin(), values.end()));
}

shape_t xshape_dims(const shape_t& x) {
  shape_t out{0};
  out.insert(out.end(), x.begin(), x.end());
  return out;
}

shape_t permuted(const shape_t& dims, const std::vector<std::size_t>& perm) {
  shape_t out;
  for (std::size_t p : perm) out.push_back(dims[p]);
  return out;
}

} // namespace pe

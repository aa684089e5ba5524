// --check-nan-inf on CPU places: the first NaN or infinity of an FP32 tensor, read in place.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/kernel.hpp"

namespace pe {

namespace {

std::optional<nonfinite_element> first_nonfinite(const kernel_context&, const tensor& t) {
  const auto values = t.values<float>();
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad == values.end()) return std::nullopt;
  return nonfinite_element{bad - values.begin(), *bad};
}

} // namespace

void register_cpu_finite_check(kernel_registry& r) {
  r.add_finite_check(place::kind::cpu, first_nonfinite);
}

} // namespace pe

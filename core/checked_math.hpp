#pragma once

// Overflow-checked arithmetic on sizes. Dims, element counts and byte counts come from files
// anyone can hand the engine (programs, parameter files, data files), so no product or sum
// of them may be computed unchecked: signed overflow is undefined behaviour.

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace pe {

/// a * b, or nullopt when it overflows int64.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

/// a + b, or nullopt when it overflows int64.
inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

/// The product of [first, last), or nullopt when a partial product overflows int64.
template <class It>
std::optional<std::int64_t> checked_product(It first, It last) {
  std::int64_t product = 1;
  for (; first != last; ++first) {
    auto next = checked_mul(product, static_cast<std::int64_t>(*first));
    if (!next) return std::nullopt;
    product = *next;
  }
  return product;
}

/// Whether `v` converts to the arithmetic type T without undefined behaviour and without
/// leaving T's range: for an integer type a finite value in [min, max] (the fraction is
/// truncated); for float any value within float's range, or an infinity or NaN (which float
/// represents).
template <class T>
bool representable_as(double v) {
  if constexpr (std::is_integral_v<T>) {
    // -2^(digits) and 2^(digits) are exact doubles; the integer range is [-2^d, 2^d).
    const double bound = std::ldexp(1.0, std::numeric_limits<T>::digits);
    return v > -bound - 1 && v < bound; // false for NaN
  } else {
    return !std::isfinite(v) || std::fabs(v) <= static_cast<double>(std::numeric_limits<T>::max());
  }
}

} // namespace pe

#pragma once

// fill_constant's value, shared by its shape inference (which rejects a value the output
// dtype cannot hold) and its CPU kernel (which fills with it), so both read it alike.

#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>
#include <type_traits>

#include "core/checked_math.hpp"
#include "core/dtype.hpp"

namespace pe {

/// A fill value of type T, or why there is none (`problem` not empty).
template <class T>
struct fill_value_t {
  T value{};
  std::string problem;
};

/// fill_constant's value as a T: `str_value` when it is set, else `value`. INT64's
/// str_value is parsed as an integer, exactly (values beyond 2^53 are why Paddle has
/// str_value); the other types through double, as Paddle does. "inf", "-inf" and "nan" are
/// accepted for FP32. A str_value that does not parse, or a value T cannot hold (1e10 for
/// INT32, NaN for an integer, 1e300 for FP32), is a problem: converting it would be
/// undefined behaviour.
template <class T>
fill_value_t<T> fill_value(float value, const std::string& str_value) {
  using parsed = std::conditional_t<std::is_same_v<T, std::int64_t>, std::int64_t, double>;
  const std::string type = to_string(dtype_of<T>());
  if (str_value.empty()) {
    if (!representable_as<T>(value))
      return {{}, "value " + std::to_string(value) + " is not representable as " + type};
    return {static_cast<T>(value), {}};
  }
  const std::string shown = "str_value '" + str_value + "'";
  parsed v{};
  const char* end = str_value.data() + str_value.size();
  auto [stop, status] = std::from_chars(str_value.data(), end, v);
  if (status == std::errc::result_out_of_range)
    return {{}, shown + " is not representable as " + type};
  if (status != std::errc() || stop != end)
    return {{}, shown + " is not a valid " + type + " value"};
  if constexpr (!std::is_same_v<parsed, std::int64_t>)
    if (!representable_as<T>(v)) return {{}, shown + " is not representable as " + type};
  return {static_cast<T>(v), {}};
}

} // namespace pe

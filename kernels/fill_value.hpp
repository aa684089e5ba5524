#pragma once

// fill_constant's and fill_any_like's values, shared by their shape inference (which rejects
// a value the output dtype cannot hold) and their CPU and CUDA kernels (which fill with it),
// so all read them alike.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
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
/// str_value; "-1.0" is -1, "1.5" is refused); the other types through double, as Paddle does. "inf", "-inf" and "nan" are
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
  // Paddle's initializers write an INT64 fill as "-1.0" (@LR_DECAY_COUNTER@'s), which its
  // kernel reads with `stream >> int64_t`, stopping at the point: a whole number's zero
  // fraction is accepted, any other fraction is not.
  if constexpr (std::is_same_v<parsed, std::int64_t>)
    if (status == std::errc() && stop != end && *stop == '.' &&
        std::all_of(stop + 1, end, [](char c) { return c == '0'; }))
      stop = end;
  if (status == std::errc::result_out_of_range)
    return {{}, shown + " is not representable as " + type};
  if (status != std::errc() || stop != end)
    return {{}, shown + " is not a valid " + type + " value"};
  if constexpr (!std::is_same_v<parsed, std::int64_t>)
    if (!representable_as<T>(v)) return {{}, shown + " is not representable as " + type};
  return {static_cast<T>(v), {}};
}

/// fill_any_like's value as a T, as Paddle's FullLikeKernel converts it: a value within
/// [lowest, max] of T, static_cast (1.5 fills INT64 with 1, -1.5 with -1; 0.5 fills BOOL
/// with true). Any other value is a problem (2 for BOOL, -1 for UINT8, 1e10 for INT32), as
/// are NaN and the infinities for every type but FP32: Paddle lets those reach the integer
/// conversion, which is undefined behaviour. FP32 holds every value.
template <class T>
fill_value_t<T> fill_like_value(float value) {
  if constexpr (std::is_integral_v<T>)
    if (!(value >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
          value <= static_cast<double>(std::numeric_limits<T>::max())))
      return {{}, "value " + std::to_string(value) + " is not representable as " +
                      to_string(dtype_of<T>())};
  return fill_value<T>(value, {}); // also refuses 2^63 for INT64, which passes the check above
}

/// fill_any_like's output: its dtype, attribute `dtype_attr` (a VarType number) or, when that
/// is negative (Paddle's -1), X's dtype `x`; and `value` as that dtype's element type T
/// (fill_like_value). Calls fill(type, T value) and returns "", or returns why there is no
/// output (a dtype the engine does not run, a value T cannot hold) without calling it.
template <class F>
std::string with_fill_like(std::int32_t dtype_attr, dtype x, float value, F&& fill) {
  const dtype type = dtype_attr < 0 ? x : static_cast<dtype>(dtype_attr);
  if (!is_supported(type))
    return (dtype_attr < 0 ? "X's dtype " : "dtype ") + to_string(type) +
           " is not supported (FP32, INT64, INT32, UINT8 or BOOL)";
  std::string problem;
  visit_element_type(type, [&](auto element) {
    const auto v = fill_like_value<decltype(element)>(value);
    if (v.problem.empty()) fill(type, v.value);
    else problem = v.problem;
  });
  return problem;
}

} // namespace pe

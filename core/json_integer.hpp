#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace pe {

/// A JSON value (nlohmann::json, or anything with its is_number_* and get) as an integer
/// of type T, when it is an integer that T holds; otherwise a pe::error saying `what` is
/// not one. Why not j.get<T>(): nlohmann converts a floating-point value by a plain cast,
/// and a cast of a float outside T's range (1e300, or an integer literal too long for 64
/// bits, which nlohmann parses as a float) is undefined behaviour, which the fuzzers of
/// files that hold JSON (checkpoint records) found.
template <class T, class Json>
T json_integer(const Json& j, const std::string& what) {
  static_assert(std::numeric_limits<T>::is_integer);
  using limits = std::numeric_limits<T>;
  if (j.is_number_unsigned()) {
    const auto u = j.template get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(limits::max())) return static_cast<T>(u);
  } else if (j.is_number_integer()) {
    const auto s = j.template get<std::int64_t>();
    const bool fits = limits::is_signed ? s >= static_cast<std::int64_t>(limits::min()) &&
                                              (limits::digits >= 63 || s <= static_cast<std::int64_t>(limits::max()))
                                        : s >= 0 && static_cast<std::uint64_t>(s) <= static_cast<std::uint64_t>(limits::max());
    if (fits) return static_cast<T>(s);
  }
  throw error(what + " is not an integer from " + std::to_string(limits::min()) + " to " +
              std::to_string(limits::max()));
}

} // namespace pe

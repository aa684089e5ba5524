#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/error.hpp"

namespace pe {

/// One op attribute value. The alternatives follow Paddle's AttrType order
/// (INT, FLOAT, STRING, INTS, FLOATS, STRINGS, BOOLEAN, BOOLEANS, then LONG, LONGS,
/// FLOAT64S, FLOAT64); block and variable attributes are not supported.
using attribute = std::variant<std::int32_t, float, std::string, std::vector<std::int32_t>,
                               std::vector<float>, std::vector<std::string>, bool,
                               std::vector<bool>, std::int64_t, std::vector<std::int64_t>,
                               std::vector<double>, double>;

/// Paddle's name of an attribute's type ("INT", "FLOATS", ...), for error messages.
std::string attribute_type_name(const attribute& a);

/// An op's attributes by name, with the schema's defaults already filled in.
class attribute_map {
 public:
  void set(std::string name, attribute value) { values_[std::move(name)] = std::move(value); }

  bool has(std::string_view name) const { return values_.find(name) != values_.end(); }

  const attribute* find(std::string_view name) const {
    auto i = values_.find(name);
    return i == values_.end() ? nullptr : &i->second;
  }

  /// The value of `name` as T; throws pe::error naming the attribute when it is
  /// missing or holds another type.
  template <class T>
  const T& get(std::string_view name) const {
    const attribute* a = find(name);
    if (a == nullptr) throw error("missing attribute '" + std::string(name) + "'");
    if (const T* v = std::get_if<T>(a)) return *v;
    throw error("attribute '" + std::string(name) + "' has type " + attribute_type_name(*a) +
                ", which is not the type requested");
  }

  template <class T>
  T get_or(std::string_view name, T fallback) const {
    return has(name) ? get<T>(name) : fallback;
  }

  const std::map<std::string, attribute, std::less<>>& values() const { return values_; }

 private:
  std::map<std::string, attribute, std::less<>> values_;
};

} // namespace pe

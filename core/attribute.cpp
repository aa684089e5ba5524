#include "core/attribute.hpp"

namespace pe {

std::string attribute_type_name(const attribute& a) {
  static constexpr const char* names[] = {"INT",      "FLOAT",    "STRING", "INTS",
                                          "FLOATS",   "STRINGS",  "BOOLEAN", "BOOLEANS",
                                          "LONG",     "LONGS",    "FLOAT64S", "FLOAT64"};
  return names[a.index()];
}

} // namespace pe

#include "core/place.hpp"

namespace pe {

std::string to_string(const place& p) {
  std::string s = p.type.name() + ":" + std::to_string(p.index);
  if (p.type.form() == place_form::devices && p.device != p.index)
    s += "@dev" + std::to_string(p.device);
  return s;
}

} // namespace pe

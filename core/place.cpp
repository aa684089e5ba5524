#include "core/place.hpp"

namespace pe {

std::string to_string(const place& p) {
  if (p.type == place::kind::cpu) return "cpu:" + std::to_string(p.index);
  std::string s = "gpu:" + std::to_string(p.index);
  if (p.device != p.index) s += "@dev" + std::to_string(p.device);
  return s;
}

} // namespace pe

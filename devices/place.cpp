#include "devices/place.hpp"

namespace pe {

std::string to_string(const place& p) {
  return (p.type == place::kind::cpu ? "cpu:" : "gpu:") + std::to_string(p.index);
}

} // namespace pe

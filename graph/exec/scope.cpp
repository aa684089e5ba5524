#include "graph/exec/scope.hpp"

namespace pe {

const tensor& scope::get(std::string_view name) const {
  const tensor* t = find(name);
  if (t == nullptr) throw error("variable '" + std::string(name) + "' does not exist");
  if (!t->initialized())
    throw error("variable '" + std::string(name) + "' is read before any op wrote it");
  return *t;
}

std::vector<std::string> scope::names() const {
  std::vector<std::string> out;
  out.reserve(vars_.size());
  for (const auto& [name, _] : vars_) out.push_back(name);
  return out;
}

} // namespace pe

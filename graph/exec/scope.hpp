#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.hpp"

namespace pe {

/// The variables of one place, by name. Tensors never move once created, so kernel
/// contexts can hold pointers to them for the scope's lifetime.
class scope {
 public:
  /// The variable `name`, created uninitialised when absent.
  tensor& var(const std::string& name) { return vars_[name]; }

  tensor* find(std::string_view name) {
    auto it = vars_.find(name);
    return it == vars_.end() ? nullptr : &it->second;
  }
  const tensor* find(std::string_view name) const {
    auto it = vars_.find(name);
    return it == vars_.end() ? nullptr : &it->second;
  }

  /// The initialised variable `name`; throws pe::error when absent or uninitialised.
  const tensor& get(std::string_view name) const;

  std::vector<std::string> names() const;

 private:
  std::map<std::string, tensor, std::less<>> vars_;
};

} // namespace pe

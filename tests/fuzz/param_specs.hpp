#pragma once

#include <array>
#include <cstdint>

#include "graph/exec/param_files.hpp"

namespace pe::fuzz {

/// What the parameter-file target declares, chosen by the input's first byte: bit 0 a
/// combined file, bits 1-3 variable "a", bits 4-6 variable "b" (combined files only). The
/// seed generator writes files matching these.
inline const std::array<param_spec, 8>& declared_params() {
  static const std::array<param_spec, 8> specs = {
      param_spec{"", dtype::fp32, {-1, -1}},   param_spec{"", dtype::fp32, {2, 3}},
      param_spec{"", dtype::fp32, {1}},        param_spec{"", dtype::int64, {-1}},
      param_spec{"", dtype::int32, {4, -1, 2}}, param_spec{"", dtype::uint8, {3}},
      param_spec{"", dtype::boolean, {2, 2}},  param_spec{"", dtype::fp32, {-1, 3, 2, 2}}};
  return specs;
}

inline param_spec declared_param(std::uint8_t index, const char* name) {
  param_spec spec = declared_params()[index % declared_params().size()];
  spec.name = name;
  return spec;
}

} // namespace pe::fuzz

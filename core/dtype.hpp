#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pe {

/// Element type of a tensor. The values are Paddle's VarType.Type numbers, so a
/// ProgramDesc's data_type converts with a cast.
enum class dtype : int {
  boolean = 0,
  int16 = 1,
  int32 = 2,
  int64 = 3,
  fp16 = 4,
  fp32 = 5,
  fp64 = 6,
  uint8 = 20,
  int8 = 21,
  bf16 = 22,
};

/// Bytes per element; 0 for a value outside the enum.
std::size_t size_of(dtype t);

/// Paddle's spelling ("FP32", "INT64", ...), for error messages.
std::string to_string(dtype t);

/// Whether programs may declare variables of this type: FP32 data, INT64 labels and indices,
/// INT32 counters and seeds, UINT8 dropout masks, BOOL flags.
bool is_supported(dtype t);

/// The dtype tag of a C++ element type.
template <class T>
constexpr dtype dtype_of();
template <>
constexpr dtype dtype_of<float>() { return dtype::fp32; }
template <>
constexpr dtype dtype_of<double>() { return dtype::fp64; }
template <>
constexpr dtype dtype_of<std::int32_t>() { return dtype::int32; }
template <>
constexpr dtype dtype_of<std::int64_t>() { return dtype::int64; }
template <>
constexpr dtype dtype_of<std::uint8_t>() { return dtype::uint8; }
template <>
constexpr dtype dtype_of<bool>() { return dtype::boolean; }

/// Calls f(T{}) with the C++ element type T of `t` (one of the dtype_of types above), so a
/// kernel can be written once for all of them; false, without calling f, for a dtype that
/// has none (FP16, BF16, INT8, INT16).
template <class F>
bool visit_element_type(dtype t, F&& f) {
  switch (t) {
    case dtype::boolean: f(bool{}); return true;
    case dtype::uint8: f(std::uint8_t{}); return true;
    case dtype::int32: f(std::int32_t{}); return true;
    case dtype::int64: f(std::int64_t{}); return true;
    case dtype::fp32: f(float{}); return true;
    case dtype::fp64: f(double{}); return true;
    default: return false;
  }
}

} // namespace pe

#include "core/dtype.hpp"

namespace pe {

std::size_t size_of(dtype t) {
  switch (t) {
    case dtype::boolean:
    case dtype::uint8:
    case dtype::int8:
      return 1;
    case dtype::int16:
    case dtype::fp16:
    case dtype::bf16:
      return 2;
    case dtype::int32:
    case dtype::fp32:
      return 4;
    case dtype::int64:
    case dtype::fp64:
      return 8;
  }
  return 0;
}

std::string to_string(dtype t) {
  switch (t) {
    case dtype::boolean: return "BOOL";
    case dtype::int16: return "INT16";
    case dtype::int32: return "INT32";
    case dtype::int64: return "INT64";
    case dtype::fp16: return "FP16";
    case dtype::fp32: return "FP32";
    case dtype::fp64: return "FP64";
    case dtype::uint8: return "UINT8";
    case dtype::int8: return "INT8";
    case dtype::bf16: return "BF16";
  }
  return "dtype(" + std::to_string(static_cast<int>(t)) + ")";
}

bool is_supported(dtype t) {
  return t == dtype::fp32 || t == dtype::int64 || t == dtype::int32 || t == dtype::uint8 ||
         t == dtype::boolean;
}

} // namespace pe

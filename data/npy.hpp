#pragma once

#include <string>

#include "core/tensor.hpp"

namespace pe {

/// Reads a numpy .npy file (format version 1.0, 2.0 or 3.0, C order, little-endian) into a
/// CPU tensor of its shape. The dtypes are the engine's that numpy has: '|b1' BOOL, '|u1'
/// UINT8, '<i4' INT32, '<i8' INT64, '<f4' FP32, '<f8' FP64. Throws pe::error naming the file
/// on a missing file, a bad magic string or version, a truncated or malformed header,
/// fortran_order True, a big-endian or unknown descr, a shape whose element count overflows
/// or disagrees with the file size (truncated data or trailing bytes), and a BOOL element
/// other than 0 or 1. Nothing is allocated from the header's sizes before they are checked
/// against the file size.
tensor read_npy(const std::string& path);

/// Writes `t` (a CPU tensor of one of the dtypes above) as a numpy .npy file, version 1.0
/// (what np.save writes for these dtypes). Throws pe::error naming the
/// file when the tensor has another dtype or no data, its rank is too large for a 1.0
/// header, or the file cannot be written.
void write_npy(const std::string& path, const tensor& t);

} // namespace pe

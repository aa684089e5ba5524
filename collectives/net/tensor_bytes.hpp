#pragma once

#include <string>
#include <vector>

#include "core/byte_buffer.hpp"
#include "core/tensor.hpp"

namespace pe {

/// Tensors as the bytes that cross processes (parameters sent from rank 0, fetched values
/// gathered for the merge): per tensor its dtype, shape and raw values, in the host's byte
/// order (same-endianness peers only). Never floats through a serialiser (reference.md §9).
byte_buffer encode_tensors(const std::vector<const tensor*>& tensors);

/// The tensors encode_tensors wrote. Everything is checked against the bytes that are
/// there: a truncated message, an unknown dtype, a negative or overflowing shape or a size
/// that disagrees with the shape is a pe::error naming `source` (the peer), never a crash
/// or an allocation larger than the message.
std::vector<tensor> decode_tensors(const byte_buffer& bytes, const std::string& source);

} // namespace pe

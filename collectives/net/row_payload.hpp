#pragma once
// What an all_gather of SELECTED_ROWS values (sparse gradients) sends between processes, and
// the checks of what a peer sent: its payload sizes differ by process, so they are checked
// against what this process holds instead of a size both know.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/byte_buffer.hpp"
#include "core/tensor.hpp"

namespace pe {

/// The lead's SELECTED_ROWS buffers as bytes (encode_tensors): per buffer its rows (INT64
/// [n]), its value (FP32 [n, width]) and its table's height (INT64 [1]). Throws pe::error
/// naming `label` when a buffer is not a SELECTED_ROWS value.
byte_buffer encode_rows(const std::vector<tensor*>& buffers, const std::string& label);

/// The SELECTED_ROWS values `bytes` holds, one per buffer of `mine` (this process's own),
/// checked: a payload that does not decode or holds another number of buffers, a row count
/// that disagrees with the values' rows, a row outside the table, or a width or height other
/// than mine is a pe::error naming `source` (the peer) and what it sent.
std::vector<tensor> decode_rows(const byte_buffer& bytes, const std::vector<tensor*>& mine,
                                const std::string& source);

/// What a process announces before an all_gather's rows (so that every process makes the same
/// sparse-or-dense choice from every process's row count): per buffer of `buffers` (its
/// lead's SELECTED_ROWS values) its row count, width and height, as an INT64 [buffers, 3]
/// tensor's bytes; with `with_rows`, encode_rows' tensors follow in the same payload (a
/// process that expects the gather sends its rows at once instead of a round trip later).
/// Throws pe::error naming `label` when a buffer is not a SELECTED_ROWS value.
byte_buffer encode_row_counts(const std::vector<tensor*>& buffers, const std::string& label, bool with_rows = false);

/// What a peer announced: its row count per buffer, and its rows when it sent them along.
struct announced_rows {
  std::vector<std::int64_t> counts;
  std::optional<std::vector<tensor>> rows; ///< as decode_rows gives them
};

/// The row counts `bytes` announces, one per buffer of `mine`, and the rows sent with them,
/// checked: a payload that does not decode, holds another number of buffers or tensors, a
/// negative count, a width or height other than mine, rows that decode_rows refuses or whose
/// number differs from the count announced is a pe::error naming `source`.
announced_rows decode_row_counts(const byte_buffer& bytes, const std::vector<tensor*>& mine,
                                 const std::string& source);

/// Throws naming `source` unless `rows` (buffer `buffer`'s, as decoded) has the `announced` count.
void expect_announced(const std::string& source, std::size_t buffer, std::int64_t announced, const tensor& rows);

} // namespace pe

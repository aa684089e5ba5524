#include "collectives/net/row_payload.hpp"

#include <memory>

#include "collectives/net/tensor_bytes.hpp"
#include "core/error.hpp"
#include "core/selected_rows.hpp"

namespace pe {

namespace {

/// Throws unless `t` holds a SELECTED_ROWS value.
void expect_rows(const tensor* t, const std::string& label) {
  if (!t->initialized() || t->type() != dtype::fp32 || !t->sparse_rows())
    throw error(label + ": a buffer is missing, not FP32 or not SELECTED_ROWS");
}

/// Throws naming `which` unless `width` and `height` are those of `mine`.
void expect_table(const std::string& which, std::int64_t width, std::int64_t height, const tensor& mine) {
  const std::int64_t my_height = mine.sparse_rows()->height();
  if (width != mine.dim(1) || height != my_height)
    throw error(which + " has rows of width " + std::to_string(width) + " in a table of " + std::to_string(height) +
                " rows, this process width " + std::to_string(mine.dim(1)) + " and " + std::to_string(my_height) +
                " rows");
}

/// Appends encode_rows' tensors for `buffers` to `parts`.
void add_row_parts(const std::vector<tensor*>& buffers, const std::string& label, std::vector<tensor>& parts) {
  for (const tensor* t : buffers) {
    expect_rows(t, label);
    parts.push_back(tensor::from_vector(t->sparse_rows()->rows(), {static_cast<std::int64_t>(t->sparse_rows()->rows().size())}));
    parts.push_back(*t);
    parts.push_back(tensor::from_vector<std::int64_t>({t->sparse_rows()->height()}, {1}));
  }
}

byte_buffer encode_parts(const std::vector<tensor>& parts) {
  std::vector<const tensor*> views;
  for (const tensor& t : parts) views.push_back(&t);
  return encode_tensors(views);
}

/// The SELECTED_ROWS values in parts[first, first + 3 * mine.size()), checked (decode_rows).
std::vector<tensor> rows_from_parts(std::vector<tensor>& parts, std::size_t first, const std::vector<tensor*>& mine,
                                    const std::string& source) {
  std::vector<tensor> out;
  for (std::size_t v = 0; v < mine.size(); ++v) {
    const tensor& rows = parts[first + 3 * v];
    tensor& value = parts[first + 3 * v + 1];
    const tensor& height = parts[first + 3 * v + 2];
    const std::string which = source + "'s buffer " + std::to_string(v);
    if (rows.type() != dtype::int64 || rows.rank() != 1 || height.type() != dtype::int64 || height.numel() != 1 ||
        value.type() != dtype::fp32 || value.rank() != 2)
      throw error(which + " is not rows (INT64 [n]), values (FP32 [n, width]) and a height (INT64 [1])");
    if (value.dim(0) != rows.numel())
      throw error(which + " claims " + std::to_string(rows.numel()) + " rows but sent values for " +
                  std::to_string(value.dim(0)));
    expect_table(which, value.dim(1), height.data<std::int64_t>()[0], *mine[v]);
    const std::int64_t my_height = mine[v]->sparse_rows()->height();
    const auto r = rows.values<std::int64_t>();
    value.set_sparse_rows(std::make_shared<const selected_rows>(std::vector<std::int64_t>(r.begin(), r.end()),
                                                                my_height, which));
    out.push_back(std::move(value));
  }
  return out;
}

} // namespace

byte_buffer encode_rows(const std::vector<tensor*>& buffers, const std::string& label) {
  std::vector<tensor> parts;
  add_row_parts(buffers, label, parts);
  return encode_parts(parts);
}

std::vector<tensor> decode_rows(const byte_buffer& bytes, const std::vector<tensor*>& mine,
                                const std::string& source) {
  std::vector<tensor> parts = decode_tensors(bytes, source);
  if (parts.size() != 3 * mine.size())
    throw error(source + " sent " + std::to_string(parts.size()) + " tensors for " + std::to_string(mine.size()) +
                " SELECTED_ROWS buffers (3 each: rows, values, height)");
  return rows_from_parts(parts, 0, mine, source);
}

byte_buffer encode_row_counts(const std::vector<tensor*>& buffers, const std::string& label, bool with_rows) {
  std::vector<std::int64_t> counts;
  for (const tensor* t : buffers) {
    expect_rows(t, label);
    counts.insert(counts.end(), {t->dim(0), t->dim(1), t->sparse_rows()->height()});
  }
  std::vector<tensor> parts{tensor::from_vector(counts, {static_cast<std::int64_t>(buffers.size()), 3})};
  if (with_rows) add_row_parts(buffers, label, parts);
  return encode_parts(parts);
}

announced_rows decode_row_counts(const byte_buffer& bytes, const std::vector<tensor*>& mine,
                                 const std::string& source) {
  std::vector<tensor> parts = decode_tensors(bytes, source);
  const auto buffers = static_cast<std::int64_t>(mine.size());
  if ((parts.size() != 1 && parts.size() != 1 + 3 * mine.size()) || parts[0].type() != dtype::int64 ||
      parts[0].shape() != shape_t{buffers, 3})
    throw error(source + " announced its row counts as something other than INT64 [" + std::to_string(buffers) +
                ", 3] (rows, width, height per SELECTED_ROWS buffer), optionally followed by its rows");
  const std::int64_t* c = parts[0].data<std::int64_t>();
  announced_rows out;
  for (std::size_t v = 0; v < mine.size(); ++v, c += 3) {
    const std::string which = source + "'s buffer " + std::to_string(v);
    if (c[0] < 0) throw error(which + " announces " + std::to_string(c[0]) + " rows");
    expect_table(which, c[1], c[2], *mine[v]);
    out.counts.push_back(c[0]);
  }
  if (parts.size() > 1) {
    out.rows = rows_from_parts(parts, 1, mine, source);
    for (std::size_t v = 0; v < mine.size(); ++v) expect_announced(source, v, out.counts[v], (*out.rows)[v]);
  }
  return out;
}

void expect_announced(const std::string& source, std::size_t buffer, std::int64_t announced, const tensor& rows) {
  if (rows.dim(0) != announced)
    throw error(source + " announced " + std::to_string(announced) + " rows of buffer " + std::to_string(buffer) +
                " but sent " + std::to_string(rows.dim(0)));
}

} // namespace pe

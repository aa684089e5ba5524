#include "core/sparse_exchange.hpp"

namespace pe {

std::int64_t sparse_exchange_bytes(std::int64_t gathered_rows, std::int64_t width) {
  return gathered_rows * (width * 4 + 8);
}

std::int64_t dense_exchange_bytes(std::int64_t height, std::int64_t width) {
  return height * (width + 1) * 4;
}

void sparse_exchange_cost::add(std::int64_t gathered_rows, std::int64_t height, std::int64_t width) {
  sparse_bytes += sparse_exchange_bytes(gathered_rows, width);
  dense_bytes += dense_exchange_bytes(height, width);
}

bool sparse_exchange_cost::takes_dense(sparse_exchange mode) const {
  if (mode != sparse_exchange::automatic) return mode == sparse_exchange::dense;
  return sparse_bytes > dense_bytes;
}

} // namespace pe

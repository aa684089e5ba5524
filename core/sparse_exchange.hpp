#pragma once
// How the places exchange a SELECTED_ROWS (sparse) gradient: gather every rank's rows, or
// all-reduce the table densely when the gathered rows would cost more. Chosen per step from
// the row counts of every rank, which every rank knows once they are exchanged, so every rank
// takes the same path. Here because the graph (build_strategy) and the collectives both name it.
#include <cstdint>

namespace pe {

/// What a SELECTED_ROWS gradient's collective does (build_strategy::sparse_exchange,
/// pe-actor-run --sparse-exchange, Python's BuildStrategy.sparse_exchange).
enum class sparse_exchange {
  automatic, ///< per step: sparse, or dense when takes_dense_exchange says the dense buffer is smaller
  sparse,    ///< always gather every rank's rows and values (all_gather)
  dense,     ///< always all-reduce the table densely (the dense fallback)
};

/// Bytes a rank receives to gather `gathered_rows` rows (over every rank) of `width` FP32
/// values, each with its INT64 row index.
std::int64_t sparse_exchange_bytes(std::int64_t gathered_rows, std::int64_t width);

/// Bytes of the dense all-reduce's buffer for a table of `height` x `width`: the values and a
/// column that marks the rows some rank touched (so the optimizer still sees only those).
std::int64_t dense_exchange_bytes(std::int64_t height, std::int64_t width);

/// What one collective's two ways would move, summed over its variables: the choice every
/// rank makes alike from the same row counts.
struct sparse_exchange_cost {
  std::int64_t sparse_bytes = 0; ///< sparse_exchange_bytes of every variable
  std::int64_t dense_bytes = 0;  ///< dense_exchange_bytes of every variable

  /// A variable of `gathered_rows` rows over every rank, in a table of `height` x `width`.
  void add(std::int64_t gathered_rows, std::int64_t height, std::int64_t width);

  /// Whether `mode` takes the dense all-reduce: always for dense, never for sparse, and for
  /// automatic when the gather would move more bytes.
  bool takes_dense(sparse_exchange mode) const;
};

} // namespace pe

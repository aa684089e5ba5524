#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/exec/bound_op.hpp"
#include "graph/exec/feed_check.hpp"
#include "graph/exec/scope.hpp"
#include "graph/proto.hpp"
#include "graph/validate.hpp"

namespace pe {

/// The oracle: runs block 0 of a program op by op, in program order, on one CPU place,
/// with the variables of a scope. Every other executor is tested against it.
///
/// Data variables (non-persistable tensors read before any op writes them, and the outputs
/// of a program's own feed ops) must be fed on every run; feeds are checked against their
/// declared dtype and dims and placed in the scope under their names, sharing storage
/// unless an op writes them (then copied: the caller's tensors are never modified).
/// Fetches are deep copies taken after the last op; a SELECTED_ROWS variable (a sparse
/// gradient) comes back as its value with its row index (tensor::sparse_rows), which the
/// parallel executor refuses to fetch. The program's feed and fetch ops do nothing
/// themselves: feeds and fetch targets are given by name.
class reference_executor {
 public:
  /// Validates (with the tensor size limit `max_tensor_bytes`) and binds every op of
  /// `program` to `vars`, checking their FP32 outputs after each kernel with
  /// `check_nan_inf` (see bound_op). Throws pe::error on a program that fails validation
  /// or has an op without a CPU kernel.
  reference_executor(const proto::ProgramDesc& program, scope& vars, place where = place::cpu(),
                     std::int64_t max_tensor_bytes = default_max_tensor_bytes(),
                     bool check_nan_inf = false);

  /// Runs one step. Throws pe::error when a feed is missing or malformed or a kernel fails.
  std::vector<tensor> run(const feed_map& feeds, const std::vector<std::string>& fetch_list);

  /// The steps already run on these variables (see parallel_executor::set_steps_done).
  void set_steps_done(std::uint64_t steps) { steps_ = steps; }

 private:
  scope& vars_;
  feed_check feeds_;
  std::vector<bound_op> ops_; // program order, feed and fetch ops left out
  std::uint64_t steps_ = 0;   // runs before the next one
};

} // namespace pe

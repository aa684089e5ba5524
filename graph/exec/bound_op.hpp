#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/proto.hpp"
#include "kernels/kernel.hpp"

namespace pe {

class scope;

/// One op ready to run on a place: schema checked, attributes resolved, kernel found and
/// its tensors bound to variables of a scope. Built once, run every step.
class bound_op {
 public:
  /// Throws pe::error naming the op when its type is unknown, it is a host op (feed,
  /// fetch) or no kernel exists for the place. With `check_nan_inf` (Paddle's
  /// FLAGS_check_nan_inf) run() also checks the FP32 outputs after the kernel, with the
  /// finite check of the kernel's kind of place; without it nothing is checked and nothing
  /// costs. The kernel is that of `kernels` places (default: `where`'s kind; see
  /// device::kernel_kind).
  bound_op(const proto::OpDesc& op, scope& vars, place where, int op_index,
           bool check_nan_inf = false, std::optional<place::kind> kernels = std::nullopt);

  /// Op `op_index` of `program`'s block `block`. An op that runs a sub-block
  /// (conditional_block) has the sub-block's ops bound too, to the same scope, place and
  /// kernels (recursively), for its kernel to run (kernel_context::run_sub_block); errors of
  /// those ops name their block ("block 1 op #0 (scale) on cpu:0: ..."). The constructor
  /// above refuses such an op: it has no program to find the block in.
  bound_op(const proto::ProgramDesc& program, int block, int op_index, scope& vars, place where,
           bool check_nan_inf = false, std::optional<place::kind> kernels = std::nullopt);

  /// Runs the kernel. An input no op has written yet, a kernel failure, or (when checked)
  /// an FP32 output holding NaN or an infinity is thrown as pe::error
  /// "op #i (type) on place: message".
  void run();

  /// The device and stream the kernel runs on (see kernel_context); the sub-block's ops too.
  void bind(device* d, stream* s);

  /// The steps run before the next run (see kernel_context::set_calls); the sub-block's ops too.
  void set_steps_before(std::uint64_t steps);

  const std::string& type() const { return context_.op_type(); }
  int index() const { return index_; }

 private:
  bound_op(const proto::OpDesc& op, const proto::ProgramDesc* program, int block, scope& vars,
           place where, int op_index, bool check_nan_inf, std::optional<place::kind> kernels);

  /// "op #3 (mul)", or "block 1 op #0 (scale)" in a sub-block.
  std::string label() const;

  kernel_context context_;
  const kernel_fn* kernel_;
  std::vector<std::pair<std::string, const tensor*>> inputs_; // to name an unset input
  std::vector<std::pair<std::string, const tensor*>> checked_outputs_; // with check_nan_inf
  const finite_check_fn* finite_check_ = nullptr;                      // with check_nan_inf
  int index_;
  int block_;
  /// The sub-block's ops, in block order; shared with the runner set in context_, so that a
  /// moved bound_op keeps a valid runner.
  std::shared_ptr<std::vector<bound_op>> sub_ops_;
};

} // namespace pe

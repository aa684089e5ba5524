#pragma once

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

  /// Runs the kernel. An input no op has written yet, a kernel failure, or (when checked)
  /// an FP32 output holding NaN or an infinity is thrown as pe::error
  /// "op #i (type) on place: message".
  void run();

  /// The device and stream the kernel runs on (see kernel_context).
  void bind(device* d, stream* s) { context_.bind(d, s); }

  /// The steps run before the next run (see kernel_context::set_calls).
  void set_steps_before(std::uint64_t steps) { context_.set_calls(steps); }

  const std::string& type() const { return context_.op_type(); }
  int index() const { return index_; }

 private:
  kernel_context context_;
  const kernel_fn* kernel_;
  std::vector<std::pair<std::string, const tensor*>> inputs_; // to name an unset input
  std::vector<std::pair<std::string, const tensor*>> checked_outputs_; // with check_nan_inf
  const finite_check_fn* finite_check_ = nullptr;                      // with check_nan_inf
  int index_;
};

} // namespace pe

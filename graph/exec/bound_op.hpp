#pragma once

#include <string>
#include <utility>
#include <vector>

#include "devices/kernel.hpp"
#include "graph/proto.hpp"

namespace pe {

class scope;

/// One op ready to run on a place: schema checked, attributes resolved, kernel found and
/// its tensors bound to variables of a scope. Built once, run every step.
class bound_op {
 public:
  /// Throws pe::error naming the op when its type is unknown, it is a host op (feed,
  /// fetch) or no kernel exists for the place.
  bound_op(const proto::OpDesc& op, scope& vars, place where, int op_index);

  /// Runs the kernel. An input no op has written yet, or a kernel failure, is thrown as pe::error "op #i (type) on place: message".
  void run();

  /// The device and stream the kernel runs on (see kernel_context).
  void bind(device* d, stream* s) { context_.bind(d, s); }

  const std::string& type() const { return context_.op_type(); }
  int index() const { return index_; }

 private:
  kernel_context context_;
  const kernel_fn* kernel_;
  std::vector<std::pair<std::string, const tensor*>> inputs_; // to name an unset input
  int index_;
};

} // namespace pe

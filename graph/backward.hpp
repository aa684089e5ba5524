#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/proto.hpp"

namespace pe {

/// Paddle's append_backward: appends to `main` the fill_constant(loss@GRAD, 1.0) seed op
/// (op_role Backward|Loss), the grad ops of every forward op on a path from a trainable
/// parameter to `loss` in reverse order (op_role Backward), and `sum` ops that add several
/// contributions to one gradient (renamed X@GRAD@RENAME@k). The op producing a parameter's
/// gradient carries op_role_var [param, grad]. Returns the (parameter, gradient) pairs.
std::vector<std::pair<std::string, std::string>> append_backward(proto::ProgramDesc& main,
                                                                 const std::string& loss);

} // namespace pe

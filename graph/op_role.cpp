#include "graph/op_role.hpp"

#include "graph/attributes.hpp"

namespace pe {

std::int32_t role_of(const proto::OpDesc& op) {
  const proto::OpDesc::Attr* a = find_attr(op, "op_role");
  return a == nullptr ? op_role::forward : a->i();
}

} // namespace pe

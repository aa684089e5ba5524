#include "kernels/cumsum_ops.hpp"

#include <string>

namespace pe {

cumsum_front cumsum_front_of(const kernel_context& ctx, const tensor& x) {
  if (!cumsum_dtype(x.type())) ctx.fail("X must be FP32, INT64 or INT32, got " + to_string(x.type()));
  const attribute_map& a = ctx.attrs();
  return {cumsum_geometry_of(ctx, x.shape(), a.get<std::int32_t>("axis"), a.get<bool>("flatten")),
          a.get<bool>("exclusive"), a.get<bool>("reverse")};
}

} // namespace pe

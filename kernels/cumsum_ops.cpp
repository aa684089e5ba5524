#include "kernels/cumsum_ops.hpp"

namespace pe {

cumsum_front cumsum_front_of(const kernel_context& ctx, const tensor& x) {
  const attribute_map& a = ctx.attrs();
  return {cumsum_geometry_of(ctx, x.shape(), a.get<std::int32_t>("axis"), a.get<bool>("flatten")),
          a.get<bool>("exclusive"), a.get<bool>("reverse")};
}

} // namespace pe

#include "kernels/reduce_ops.hpp"

#include <string>
#include <utility>

#include "kernels/math_shapes.hpp"

namespace pe {

namespace {

reduce_front mean_front(const kernel_context&, const tensor& x) { return {std::vector<bool>(x.rank(), true), {1}}; }

reduce_front reduce_mean_front(const kernel_context& ctx, const tensor& x) {
  const attribute_map& a = ctx.attrs();
  std::vector<bool> reduced =
      reduced_axes(ctx, x.rank(), a.get<std::vector<std::int32_t>>("dim"), a.get<bool>("reduce_all"));
  shape_t out_dims = reduced_dims(x.shape(), reduced, a.get<bool>("keep_dim"));
  return {std::move(reduced), std::move(out_dims)};
}

} // namespace

float inverse_count(std::int64_t full, std::int64_t small) {
  return small == 0 || full == 0 ? 0.f : static_cast<float>(small) / static_cast<float>(full);
}

void register_reduce_ops(kernel_registry& r, place::kind kind, void (*average)(kernel_context&, reduce_rule),
                         void (*average_grad)(kernel_context&, reduce_rule)) {
  for (const auto& op : {std::pair<const char*, reduce_rule>{"mean", mean_front},
                         {"reduce_mean", reduce_mean_front}}) {
    // The rule by name: clang before 16 captures no structured binding.
    const reduce_rule rule = op.second;
    r.add(op.first, kind, [average, rule](kernel_context& ctx) { average(ctx, rule); });
    r.add(std::string(op.first) + "_grad", kind, [average_grad, rule](kernel_context& ctx) { average_grad(ctx, rule); });
  }
}

} // namespace pe

#include "kernels/reduce_ops.hpp"

#include <string>
#include <utility>

#include "kernels/math_shapes.hpp"

namespace pe {

namespace {

reduce_front mean_front(const kernel_context&, const tensor& x) { return {std::vector<bool>(x.rank(), true), {1}}; }

/// The axes of the dim attribute (INTS for reduce_mean, LONGS for reduce_sum), keep_dim and
/// reduce_all.
template <class Int>
reduce_front axes_front(const kernel_context& ctx, const tensor& x, bool averages) {
  const attribute_map& a = ctx.attrs();
  std::vector<bool> reduced =
      reduced_axes(ctx, x.rank(), a.get<std::vector<Int>>("dim"), a.get<bool>("reduce_all"));
  shape_t out_dims = reduced_dims(x.shape(), reduced, a.get<bool>("keep_dim"));
  return {std::move(reduced), std::move(out_dims), averages};
}

reduce_front reduce_mean_front(const kernel_context& ctx, const tensor& x) {
  return axes_front<std::int32_t>(ctx, x, true);
}

reduce_front reduce_sum_front(const kernel_context& ctx, const tensor& x) {
  const attribute_map& a = ctx.attrs();
  expect_fp32_reduce_dtypes(ctx, a.get<std::int32_t>("in_dtype"), a.get<std::int32_t>("out_dtype"));
  return axes_front<std::int64_t>(ctx, x, false);
}

} // namespace

float inverse_count(std::int64_t full, std::int64_t small) {
  return small == 0 || full == 0 ? 0.f : static_cast<float>(small) / static_cast<float>(full);
}

float reduce_scale(const reduce_front& f, std::int64_t full, std::int64_t small) {
  return f.averages ? inverse_count(full, small) : 1.f;
}

void register_reduce_ops(kernel_registry& r, place::kind kind, void (*reduce)(kernel_context&, reduce_rule),
                         void (*reduce_grad)(kernel_context&, reduce_rule)) {
  for (const auto& op : {std::pair<const char*, reduce_rule>{"mean", mean_front},
                         {"reduce_mean", reduce_mean_front},
                         {"reduce_sum", reduce_sum_front}}) {
    // The rule by name: clang before 16 captures no structured binding.
    const reduce_rule rule = op.second;
    r.add(op.first, kind, [reduce, rule](kernel_context& ctx) { reduce(ctx, rule); });
    r.add(std::string(op.first) + "_grad", kind, [reduce_grad, rule](kernel_context& ctx) { reduce_grad(ctx, rule); });
  }
}

} // namespace pe

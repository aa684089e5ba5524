// CPU kernels of the condition ops (less_than, less_equal, greater_than, greater_equal,
// equal, not_equal, logical_and, logical_or, logical_xor, logical_not): BOOL Out from
// kernels/condition_ops.hpp's broadcast and element functors, shared with the CUDA kernels.
#include <cstdint>
#include <string>

#include "kernels/condition_ops.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"

namespace pe {

namespace {

/// Input `slot`[i], checked to be initialised.
const tensor& set_input(const kernel_context& ctx, std::string_view slot, std::size_t i) {
  const tensor& t = ctx.input(slot, i);
  if (!t.initialized()) ctx.fail("input " + std::string(slot) + " has no value");
  return t;
}

/// The kernel of the binary condition op with element functor F: Out = F(X, Y) elementwise
/// with the small operand broadcast, as BOOL.
template <class F>
struct binary_condition {
  static void run(kernel_context& ctx);
};

template <class F>
void binary_condition<F>::run(kernel_context& ctx) {
  const condition_front c = condition_front_of(ctx, set_input);
  const tensor& full = c.full();
  const tensor& small = c.small();
  const broadcast_layout layout(c.b.out, c.b.repeated);
  const ordered_fn<F> f{F{}, c.b.swapped};
  write_unaliased(ctx.output("Out"), {&c.x, &c.y}, [&](tensor& out) {
    out.resize(dtype::boolean, c.b.out);
    bool* o = out.data<bool>();
    if (!visit_element_type(full.type(), [&](auto element) {
          using T = decltype(element);
          const T* a = full.data<T>();
          const T* b = small.data<T>();
          layout.for_each_element([&](std::int64_t i, std::int64_t j) { o[i] = f(a[i], b[j]); });
        }))
      ctx.fail("X's dtype " + to_string(full.type()) + " is not supported");
  });
}

/// Out = !X (X's elements true when nonzero), as BOOL.
void logical_not(kernel_context& ctx) {
  const tensor& x = set_input(ctx, "X", 0);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    out.resize(dtype::boolean, x.shape());
    bool* o = out.data<bool>();
    if (!visit_element_type(x.type(), [&](auto element) {
          using T = decltype(element);
          const T* a = x.data<T>();
          for (std::int64_t i = 0; i < x.numel(); ++i) o[i] = !static_cast<bool>(a[i]);
        }))
      ctx.fail("X's dtype " + to_string(x.type()) + " is not supported");
  });
}

} // namespace

void register_condition_kernels(kernel_registry& r) {
  register_condition_ops<binary_condition>(r, place::kind::cpu, logical_not);
}

} // namespace pe

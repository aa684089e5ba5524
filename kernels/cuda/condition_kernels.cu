// CUDA kernels of the condition ops (less_than, less_equal, greater_than, greater_equal,
// equal, not_equal, logical_and, logical_or, logical_xor, logical_not): BOOL Out, one thread
// per element, the small operand indexed through reduce_geometry.hpp; the broadcast and the
// element functors are kernels/condition_ops.hpp's, shared with the CPU kernels.
#include <cstdint>
#include <string>

#include "kernels/condition_ops.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cuda/reduce_geometry.hpp"

namespace pe::cuda {

namespace {

/// out[i] = f(full[i], small[small_index(i)]).
template <class T, class F>
struct condition_map {
  const T* full;
  const T* small;
  bool* out;
  reduce_geometry g;
  ordered_fn<F> f;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { out[i] = f(full[i], small[g.small_index(i)]); }
};

/// out[i] = !x[i].
template <class T>
struct logical_not_map {
  const T* x;
  bool* out;
  PE_HOST_DEVICE void operator()(std::int64_t i) const { out[i] = !static_cast<bool>(x[i]); }
};

/// The kernel of the binary condition op with element functor F.
template <class F>
struct binary_condition {
  static void run(kernel_context& ctx);
};

template <class F>
void binary_condition<F>::run(kernel_context& ctx) {
  const condition_front c = condition_front_of(ctx, gpu_input);
  const tensor& full = c.full();
  const tensor& small = c.small();
  reduce_geometry g;
  try {
    g = reduce_geometry::make(c.b.out, c.b.repeated);
  } catch (const error& e) {
    ctx.fail(e.what());
  }
  write_unaliased(ctx.output("Out"), {&c.x, &c.y}, [&](tensor& out) {
    resize_output(ctx, out, dtype::boolean, c.b.out);
    if (!visit_element_type(full.type(), [&](auto element) {
          using T = decltype(element);
          for_each(ctx, out.numel(),
                   condition_map<T, F>{full.data<T>(), small.data<T>(), out.data<bool>(), g,
                                       ordered_fn<F>{F{}, c.b.swapped}});
        }))
      ctx.fail("X's dtype " + to_string(full.type()) + " is not supported");
  });
}

void logical_not(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    resize_output(ctx, out, dtype::boolean, x.shape());
    if (!visit_element_type(x.type(), [&](auto element) {
          using T = decltype(element);
          for_each(ctx, x.numel(), logical_not_map<T>{x.data<T>(), out.data<bool>()});
        }))
      ctx.fail("X's dtype " + to_string(x.type()) + " is not supported");
  });
}

} // namespace

void register_condition_kernels(kernel_registry& r) {
  register_condition_ops<binary_condition>(r, place::kind::gpu, logical_not);
}

} // namespace pe::cuda

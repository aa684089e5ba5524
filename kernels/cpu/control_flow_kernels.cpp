// CPU kernels of the control-flow ops (conditional_block, select_input, increment): the
// kernels of kernels/control_flow_ops.cpp with the host's moves, elements read directly.
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/control_flow_ops.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"

namespace pe {

namespace {

const tensor& set_input(const kernel_context& ctx, std::string_view slot, std::size_t i) {
  const tensor& t = ctx.input(slot, i);
  if (!t.initialized())
    ctx.fail("input " + std::string(slot) + (i > 0 ? "[" + std::to_string(i) + "]" : "") + " has no value");
  return t;
}

void copy_to(kernel_context& ctx, const tensor& in, std::string_view slot) {
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    out.resize(in.type(), in.shape());
    std::memcpy(out.raw(), in.raw(), in.bytes());
  });
}

template <class T>
void add_step(const tensor& x, tensor& out, float step) {
  const T v = x.data<T>()[0] + static_cast<T>(step);
  out.resize(x.type(), x.shape()); // keeps X's buffer in place
  out.data<T>()[0] = v;
}

void increment(kernel_context& ctx, const tensor& x, float step) {
  tensor& out = ctx.output("Out");
  switch (x.type()) {
    case dtype::int64: return add_step<std::int64_t>(x, out, step);
    case dtype::int32: return add_step<std::int32_t>(x, out, step);
    default: return add_step<float>(x, out, step);
  }
}

} // namespace

void register_control_flow_kernels(kernel_registry& r) {
  register_control_flow_ops(r, place::kind::cpu,
                            {set_input, [](const kernel_context&, const tensor& t) { return t.data<bool>()[0]; },
                             [](const kernel_context&, const tensor& t) { return t.data<std::int32_t>()[0]; },
                             copy_to, increment});
}

} // namespace pe

// CPU kernels of slice and slice_grad: kernels/slice_ops.hpp's index map over every element
// of the box (shared with the CUDA kernel), elements moved as 4- or 8-byte words whatever
// their dtype. slice_grad zeroes Input@GRAD, then scatters Out@GRAD into the box.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/shape_ops.hpp"
#include "kernels/slice_ops.hpp"

namespace pe {

namespace {

/// Input `slot`, checked to be initialised.
const tensor& initialized(const kernel_context& ctx, std::string_view slot) {
  const tensor& t = ctx.input(slot);
  if (!t.initialized()) ctx.fail("input " + std::string(slot) + " is uninitialised");
  return t;
}

/// Out = the box of Input.
void slice(kernel_context& ctx) {
  const slice_plan p = slice_plan_of(ctx, initialized(ctx, "Input"), slice_bound_on_host);
  write_unaliased(ctx.output("Out"), {&p.input}, [&](tensor& out) {
    out.resize(p.input.type(), p.box.out_dims);
    visit_transpose_word(ctx, p.input.type(), [&](auto word) {
      using w = decltype(word);
      const slice_map<w> map{static_cast<const w*>(p.input.raw()), static_cast<w*>(out.raw()), p.index, true};
      for (std::int64_t i = 0; i < out.numel(); ++i) map(i);
    });
  });
}

/// Input@GRAD = zeros of Input's dims with Out@GRAD in the box.
void slice_grad(kernel_context& ctx) {
  const slice_plan p = slice_plan_of(ctx, initialized(ctx, "Input"), slice_bound_on_host);
  const tensor& dout = initialized(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, p.box.out_dims);
  write_unaliased(ctx.output("Input@GRAD"), {&dout}, [&](tensor& dx) {
    dx.resize(dout.type(), p.input.shape());
    std::memset(dx.raw(), 0, dx.bytes());
    visit_transpose_word(ctx, dout.type(), [&](auto word) {
      using w = decltype(word);
      const slice_map<w> map{static_cast<const w*>(dout.raw()), static_cast<w*>(dx.raw()), p.index, false};
      for (std::int64_t i = 0; i < dout.numel(); ++i) map(i);
    });
  });
}

} // namespace

void register_slice_kernels(kernel_registry& r) {
  r.add("slice", place::kind::cpu, slice);
  r.add("slice_grad", place::kind::cpu, slice_grad);
}

} // namespace pe

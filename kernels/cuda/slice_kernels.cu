// CUDA kernels of slice and slice_grad: kernels/slice_ops.hpp's index map (shared with the
// CPU kernel), a thread per element of the box, elements moved as 4- or 8-byte words
// whatever their dtype. slice_grad zeroes Input@GRAD, then scatters Out@GRAD into the box.
#include <cstdint>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/shape_ops.hpp"
#include "kernels/slice_ops.hpp"

namespace pe::cuda {

namespace {

/// A bound tensor's element i, read back from the device (it waits for the stream: a step
/// slicing with tensor bounds cannot be captured as a CUDA graph).
slice_bound_reader device_bounds(const kernel_context& ctx) {
  return [&ctx](const tensor& values, std::int64_t i) -> std::int64_t {
    if (values.where().type != place::kind::gpu) return slice_bound_on_host(values, i);
    return values.type() == dtype::int32 ? read_back(ctx, values.data<std::int32_t>() + i)
                                         : read_back(ctx, values.data<std::int64_t>() + i);
  };
}

/// Out = the box of Input.
void slice(kernel_context& ctx) {
  const slice_plan p = slice_plan_of(ctx, gpu_input(ctx, "Input"), device_bounds(ctx));
  write_unaliased(ctx.output("Out"), {&p.input}, [&](tensor& out) {
    resize_output(ctx, out, p.input.type(), p.box.out_dims);
    visit_transpose_word(ctx, p.input.type(), [&](auto word) {
      using w = decltype(word);
      for_each(ctx, out.numel(),
               slice_map<w>{static_cast<const w*>(p.input.raw()), static_cast<w*>(out.raw()), p.index, true});
    });
  });
}

/// Input@GRAD = zeros of Input's dims with Out@GRAD in the box.
void slice_grad(kernel_context& ctx) {
  const slice_plan p = slice_plan_of(ctx, gpu_input(ctx, "Input"), device_bounds(ctx));
  const tensor& dout = gpu_input(ctx, "Out@GRAD");
  expect_dims(ctx, "Out@GRAD", dout, p.box.out_dims);
  write_unaliased(ctx.output("Input@GRAD"), {&dout}, [&](tensor& dx) {
    resize_output(ctx, dx, dout.type(), p.input.shape());
    zero(ctx, dx);
    visit_transpose_word(ctx, dout.type(), [&](auto word) {
      using w = decltype(word);
      for_each(ctx, dout.numel(),
               slice_map<w>{static_cast<const w*>(dout.raw()), static_cast<w*>(dx.raw()), p.index, false});
    });
  });
}

} // namespace

void register_slice_kernels(kernel_registry& r) {
  r.add("slice", place::kind::gpu, slice);
  r.add("slice_grad", place::kind::gpu, slice_grad);
}

} // namespace pe::cuda

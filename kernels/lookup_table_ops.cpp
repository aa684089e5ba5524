#include "kernels/lookup_table_ops.hpp"

#include "kernels/cpu/math_kernels.hpp"

namespace pe {

namespace {

/// W (read with `fp32_input`) and Ids (with `input`) checked, padding_idx resolved against W's
/// rows.
lookup_front read_lookup_inputs(const kernel_context& ctx, input_fn fp32_input, input_fn input) {
  const tensor& w = fp32_input(ctx, "W", 0);
  expect_lookup_table(ctx, w.shape());
  const tensor& ids = input(ctx, "Ids", 0);
  if (!ids.initialized()) ctx.fail("input Ids is uninitialised");
  const lookup_version version = lookup_version_of(ctx.op_type());
  expect_lookup_ids(ctx, ids.type(), ids.shape(), version);
  const std::int64_t rows = w.dim(0);
  return {w,
          {ids, rows, w.dim(1),
           lookup_padding_row(ctx, ctx.attrs().get<std::int64_t>("padding_idx"), rows), version}};
}

} // namespace

lookup_front lookup_front_of(const kernel_context& ctx, input_fn fp32_input, input_fn input) {
  return read_lookup_inputs(ctx, fp32_input, input);
}

lookup_grad_front lookup_grad_front_of(const kernel_context& ctx, input_fn fp32_input,
                                       input_fn input) {
  const lookup_front f = read_lookup_inputs(ctx, fp32_input, input);
  const tensor& out_grad = fp32_input(ctx, "Out@GRAD", 0);
  expect_dims(ctx, "Out@GRAD", out_grad, f.g.out_dims());
  return {out_grad, f.g, f.w.shape()};
}

} // namespace pe

#include "kernels/gemm_ops.hpp"

#include <string>

#include "kernels/math_shapes.hpp"

namespace pe {

namespace {

gemm_operands mul_operands(const kernel_context& ctx, const tensor& x, const tensor& y) {
  mul_dims d = infer_mul(ctx, x.shape(), y.shape(), ctx.attrs().get<std::int32_t>("x_num_col_dims"),
                         ctx.attrs().get<std::int32_t>("y_num_col_dims"));
  return {x, y, {1, d.m, d.k, d.n, false, false, false, 1.f}, std::move(d.out)};
}

gemm_operands matmul_operands(const kernel_context& ctx, const tensor& x, const tensor& y, bool trans_x,
                              bool trans_y, float alpha) {
  matmul_dims d = infer_matmul(ctx, x.shape(), y.shape(), trans_x, trans_y);
  gemm_plan plan{d.batch, d.m, d.k, d.n, trans_x, trans_y, d.y_shared, alpha};
  if (plan.y_shared && !trans_x) plan = {1, d.batch * d.m, d.k, d.n, false, trans_y, false, alpha};
  return {x, y, plan, std::move(d.out)};
}

} // namespace

gemm_operands gemm_operands_of(const kernel_context& ctx, const tensor& x, const tensor& y) {
  std::string type = ctx.op_type();
  if (type.ends_with("_grad")) type.resize(type.size() - 5);
  const attribute_map& a = ctx.attrs();
  if (type == "mul") return mul_operands(ctx, x, y);
  if (type == "matmul_v2") return matmul_operands(ctx, x, y, a.get<bool>("trans_x"), a.get<bool>("trans_y"), 1.f);
  if (type == "matmul")
    return matmul_operands(ctx, x, y, a.get<bool>("transpose_X"), a.get<bool>("transpose_Y"), a.get<float>("alpha"));
  ctx.fail("not a GEMM op");
}

} // namespace pe

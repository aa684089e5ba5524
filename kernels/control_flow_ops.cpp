#include "kernels/control_flow_ops.hpp"

namespace pe {

std::string scalar_condition_problem(dtype type, const shape_t& dims) {
  if (type != dtype::boolean) return "Cond must be BOOL, got " + to_string(type);
  bool known = true;
  for (const auto d : dims) known = known && d >= 0;
  if (known && numel_of(dims) != 1)
    return "Cond must hold one element (is_scalar_condition), got dims " + to_string(dims);
  return {};
}

namespace {

bool sub_block_runs(const kernel_context& ctx, const control_flow_moves& m) {
  const std::size_t count = ctx.input_count("Cond");
  for (std::size_t i = 0; i < count; ++i) m.input(ctx, "Cond", i);
  if (!ctx.attrs().get<bool>("is_scalar_condition")) {
    for (std::size_t i = 0; i < count; ++i)
      if (ctx.input("Cond", i).numel() == 0) return false;
    return true;
  }
  if (count != 1) ctx.fail("is_scalar_condition takes one Cond tensor, got " + std::to_string(count));
  const tensor& cond = ctx.input("Cond");
  if (const std::string problem = scalar_condition_problem(cond.type(), cond.shape()); !problem.empty())
    ctx.fail(problem);
  return m.read_bool(ctx, cond);
}

const tensor& selected_input(const kernel_context& ctx, const control_flow_moves& m) {
  const tensor& mask = m.input(ctx, "Mask", 0);
  if (mask.type() != dtype::int32 || mask.numel() != 1)
    ctx.fail("Mask must be one INT32 element, got " + to_string(mask.type()) + " " + to_string(mask.shape()));
  const std::int32_t k = m.read_int32(ctx, mask);
  const std::size_t count = ctx.input_count("X");
  if (k < 0 || static_cast<std::size_t>(k) >= count)
    ctx.fail("Mask " + std::to_string(k) + " does not index X's " + std::to_string(count) + " variables");
  if (!ctx.input("X", static_cast<std::size_t>(k)).initialized())
    ctx.fail("X[" + std::to_string(k) + "], which Mask selects, has no value");
  return m.input(ctx, "X", static_cast<std::size_t>(k));
}

const tensor& increment_input(const kernel_context& ctx, const control_flow_moves& m) {
  const tensor& x = m.input(ctx, "X", 0);
  if (x.type() != dtype::fp32 && x.type() != dtype::int64 && x.type() != dtype::int32)
    ctx.fail("X must be FP32, INT64 or INT32, got " + to_string(x.type()));
  if (x.numel() != 1) ctx.fail("X must hold one element, got dims " + to_string(x.shape()));
  return x;
}

} // namespace

void register_control_flow_ops(kernel_registry& r, place::kind kind, const control_flow_moves& m) {
  r.add("conditional_block", kind, [m](kernel_context& ctx) {
    if (sub_block_runs(ctx, m)) ctx.run_sub_block();
  });
  r.add("select_input", kind, [m](kernel_context& ctx) { m.copy_to(ctx, selected_input(ctx, m), "Out"); });
  r.add("increment", kind, [m](kernel_context& ctx) {
    m.increment(ctx, increment_input(ctx, m), ctx.attrs().get<float>("step"));
  });
}

} // namespace pe

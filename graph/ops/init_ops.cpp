// Schemas of the initializer ops of startup programs: fill_constant, uniform_random,
// gaussian_random; and fill_any_like (paddle.full_like, ones_like, zeros_like), which fills a
// tensor of X's dims. None has a gradient.
#include "graph/op_registry.hpp"

#include "kernels/fill_value.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace pe {

namespace {

/// The output's dims (attribute `shape`, all known) and dtype (attribute `dtype`, a VarType
/// number), checking the dtype against those `allowed`.
void infer_filled(shape_context& ctx, const std::vector<dtype>& allowed) {
  const auto& dims = ctx.attrs().get<std::vector<std::int64_t>>("shape");
  for (auto d : dims)
    ctx.expect(d >= 0, "shape " + to_string(dims) + " has a negative dimension");
  const auto type = static_cast<dtype>(ctx.attrs().get<std::int32_t>("dtype"));
  ctx.expect(std::find(allowed.begin(), allowed.end(), type) != allowed.end(),
             "dtype " + to_string(type) + " is not supported");
  ctx.set_outputs("Out", dims, type);
}

/// Fails unless fill_constant's value (`str_value` when set, else `value`) fits a T.
template <class T>
void expect_fill_value(const shape_context& ctx) {
  const auto v = fill_value<T>(ctx.attrs().get<float>("value"),
                               ctx.attrs().get<std::string>("str_value"));
  ctx.expect(v.problem.empty(), "Out: " + v.problem);
}

void infer_fill_constant(shape_context& ctx) {
  infer_filled(ctx, {dtype::fp32, dtype::int64, dtype::int32, dtype::boolean});
  switch (static_cast<dtype>(ctx.attrs().get<std::int32_t>("dtype"))) {
    case dtype::int64: return expect_fill_value<std::int64_t>(ctx);
    case dtype::int32: return expect_fill_value<std::int32_t>(ctx);
    case dtype::boolean: return expect_fill_value<bool>(ctx);
    default: return expect_fill_value<float>(ctx);
  }
}

/// Out has X's dims and fill_any_like's dtype (X's when the attribute is negative), checked
/// to be one the engine runs and to hold `value` (kernels/fill_value.hpp's with_fill_like).
void infer_fill_any_like(shape_context& ctx) {
  dtype out = ctx.input_dtype("X");
  const std::string problem =
      with_fill_like(ctx.attrs().get<std::int32_t>("dtype"), ctx.input_dtype("X"),
                     ctx.attrs().get<float>("value"), [&](dtype type, auto) { out = type; });
  ctx.expect(problem.empty(), problem);
  ctx.set_outputs("Out", ctx.input_dims("X"), out);
}

} // namespace

void register_init_ops(op_registry& r) {
  constexpr auto fp32 = static_cast<std::int32_t>(dtype::fp32);
  r.add({.type = "fill_constant",
         .inputs = {},
         .outputs = {{"Out"}},
         .attrs = {{"shape", std::vector<std::int64_t>{}},
                   {"value", 0.f},
                   {"dtype", fp32},
                   {"str_value", std::string()}},
         .infer_shape = infer_fill_constant,
         .make_grad = {}});
  // Paddle registers it without a gradient (X's values are never read, only its dims and
  // dtype): the backward pass stops at it. dtype -1 is "X's dtype".
  r.add({.type = "fill_any_like",
         .inputs = {{"X"}},
         .outputs = {{"Out"}},
         .attrs = {{"value", 0.f}, {"dtype", std::int32_t{-1}}},
         .infer_shape = infer_fill_any_like,
         .make_grad = {}});
  // seed 0 asks for a nondeterministic seed, as in Paddle.
  r.add({.type = "uniform_random",
         .inputs = {},
         .outputs = {{"Out"}},
         .attrs = {{"shape", std::vector<std::int64_t>{}},
                   {"min", -1.f},
                   {"max", 1.f},
                   {"seed", std::int32_t{0}},
                   {"dtype", fp32}},
         .infer_shape = [](shape_context& ctx) {
           ctx.expect(ctx.attrs().get<float>("min") <= ctx.attrs().get<float>("max"),
                      "min must not exceed max");
           infer_filled(ctx, {dtype::fp32});
         },
         .make_grad = {}});
  r.add({.type = "gaussian_random",
         .inputs = {},
         .outputs = {{"Out"}},
         .attrs = {{"shape", std::vector<std::int64_t>{}},
                   {"mean", 0.f},
                   {"std", 1.f},
                   {"seed", std::int32_t{0}},
                   {"dtype", fp32}},
         .infer_shape = [](shape_context& ctx) {
           ctx.expect(ctx.attrs().get<float>("std") >= 0.f, "std must be >= 0");
           infer_filled(ctx, {dtype::fp32});
         },
         .make_grad = {}});
}

} // namespace pe

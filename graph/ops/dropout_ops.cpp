// Schemas of dropout and dropout_grad, with Paddle's slots and attributes.
//
// Training (is_test = false) zeroes each element of X with probability dropout_prob and
// records the kept ones in Mask (UINT8, 1 = kept); upscale_in_train divides the kept ones by
// 1 - dropout_prob, downgrade_in_infer leaves them and instead scales by 1 - dropout_prob at
// inference. The grad op reads Mask and Out@GRAD, not X. fix_seed, seed and the Seed input
// (INT32, one element) choose the random stream: see kernels/cpu/dropout_kernels.cpp.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>

#include "graph/ops/op_helpers.hpp"

namespace pe {

namespace {

/// dropout_prob in [0, 1] and a dropout_implementation Paddle knows.
void expect_dropout_attrs(const shape_context& ctx) {
  const float p = ctx.attrs().get<float>("dropout_prob");
  ctx.expect(p >= 0.f && p <= 1.f, "dropout_prob must be in [0, 1], got " + std::to_string(p));
  const auto& mode = ctx.attrs().get<std::string>("dropout_implementation");
  ctx.expect(mode == "downgrade_in_infer" || mode == "upscale_in_train",
             "dropout_implementation must be downgrade_in_infer or upscale_in_train, got '" +
                 mode + "'");
}

void infer_dropout(shape_context& ctx) {
  expect_dropout_attrs(ctx);
  const shape_t& x = fp32_dims(ctx, "X");
  if (ctx.input_count("Seed") > 0)
    ctx.expect(ctx.input_dtype("Seed") == dtype::int32 && numel_of(ctx.input_dims("Seed")) == 1,
               "Seed must be one INT32 element, got " + to_string(ctx.input_dtype("Seed")) + " " +
                   to_string(ctx.input_dims("Seed")));
  ctx.set_outputs("Out", x, dtype::fp32);
  ctx.set_outputs("Mask", x, dtype::uint8);
}

/// X@GRAD has the dims of Out@GRAD, which Mask (UINT8) must share.
void infer_dropout_grad(shape_context& ctx) {
  expect_dropout_attrs(ctx);
  const shape_t& out_grad = fp32_dims(ctx, grad_name("Out"));
  const shape_t& mask = ctx.input_dims("Mask");
  ctx.expect(ctx.input_dtype("Mask") == dtype::uint8,
             "Mask must be UINT8, got " + to_string(ctx.input_dtype("Mask")));
  ctx.expect(dims_compatible(mask, out_grad), "Mask dims " + to_string(mask) +
                                                  " differ from Out@GRAD dims " +
                                                  to_string(out_grad));
  ctx.set_outputs(grad_name("X"), out_grad, dtype::fp32);
}

} // namespace

void register_dropout_ops(op_registry& r) {
  // Paddle 2.x no longer writes fix_seed and seed (they became extra attributes); 1.x
  // programs do.
  add_with_grad(r,
                {.type = "dropout",
                 .inputs = {{"X"}, {.name = "Seed", .dispensable = true}},
                 .outputs = {{"Out"}, {.name = "Mask", .dispensable = true}},
                 .attrs = {{"dropout_prob", 0.5f},
                           {"is_test", false},
                           {"fix_seed", false},
                           {"seed", std::int32_t{0}},
                           {"dropout_implementation", std::string("downgrade_in_infer")}},
                 .infer_shape = infer_dropout,
                 .make_grad = {}},
                {.forward_inputs = {},
                 .forward_outputs = {"Mask"},
                 .output_grads = {"Out"},
                 .input_grads = {"X"}},
                infer_dropout_grad);
}

} // namespace pe

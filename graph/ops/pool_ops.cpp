// Schemas of pool2d (max and avg, global, ceil_mode, exclusive) and of its grad op, which
// reads X, Out and Out@GRAD as Paddle's does. The geometry is kernels/window_shapes.hpp's,
// the rule the oneDNN kernels apply. Adaptive pooling other than the global case and NHWC
// are refused.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops/op_helpers.hpp"
#include "kernels/window_shapes.hpp"

namespace pe {

namespace {

void infer_pool2d(shape_context& ctx) {
  ctx.set_outputs("Out", infer_pool(ctx, fp32_dims(ctx, "X"), ctx.attrs()).out, dtype::fp32);
}

/// X@GRAD gets X's dims; Out and Out@GRAD must have the dims the forward gives.
void infer_pool2d_grad(shape_context& ctx) {
  const shape_t& x = fp32_dims(ctx, "X");
  const shape_t out = infer_pool(ctx, x, ctx.attrs()).out;
  for (const char* slot : {"Out", "Out@GRAD"})
    ctx.expect(dims_compatible(fp32_dims(ctx, slot), out),
               std::string(slot) + " " + to_string(ctx.input_dims(slot)) +
                   " does not match the pooled " + to_string(out));
  ctx.set_outputs(grad_name("X"), x, dtype::fp32);
}

} // namespace

void register_pool_ops(op_registry& r) {
  add_with_grad(
      r,
      {.type = "pool2d",
       .inputs = {{"X"}},
       .outputs = {{"Out"}},
       .attrs = {{.name = "pooling_type", .value = std::string(), .required = true},
                 {.name = "ksize", .value = std::vector<std::int32_t>{}, .required = true},
                 {"global_pooling", false},
                 {"strides", std::vector<std::int32_t>{1, 1}},
                 {"paddings", std::vector<std::int32_t>{0, 0}},
                 {"exclusive", true},
                 {"adaptive", false},
                 {"ceil_mode", false},
                 {"data_format", std::string("NCHW")},
                 {"padding_algorithm", std::string("EXPLICIT")},
                 {"is_test", false},
                 {"use_cudnn", false},
                 {"use_mkldnn", false},
                 {"use_quantizer", false},
                 {"mkldnn_data_type", std::string("float32")}},
       .infer_shape = infer_pool2d,
       .make_grad = {}},
      {.forward_inputs = {"X"},
       .forward_outputs = {"Out"},
       .output_grads = {"Out"},
       .input_grads = {"X"}},
      infer_pool2d_grad);
}

} // namespace pe

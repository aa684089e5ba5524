// Schemas of conv2d and depthwise_conv2d (which Paddle emits when groups equals the input
// channels) and of their grad ops. The geometry is kernels/window_shapes.hpp's, the rule the
// oneDNN kernels apply. Both take every attribute Paddle 2.6 writes; the ones for cuDNN,
// oneDNN fusion and quantisation are accepted at their harmless defaults, and a value that
// would change the math (a fused activation or residual) is refused.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops/op_helpers.hpp"
#include "kernels/window_shapes.hpp"

namespace pe {

namespace {

/// Attributes that change the math when set; Paddle writes them unset.
void expect_no_fusion(const shape_context& ctx) {
  const attribute_map& a = ctx.attrs();
  for (const char* flag :
       {"fuse_relu", "fuse_residual_connection", "use_addto", "fuse_relu_before_depthwise_conv"})
    ctx.expect(!a.get<bool>(flag), std::string(flag) + " = true is not supported");
  ctx.expect(a.get<std::string>("fuse_activation").empty(),
             "fuse_activation '" + a.get<std::string>("fuse_activation") + "' is not supported");
  ctx.expect(ctx.input_count("Bias") == 0 && ctx.input_count("ResidualData") == 0,
             "the Bias and ResidualData inputs (oneDNN-fused convolutions) are not supported");
}

void infer_conv2d(shape_context& ctx) {
  expect_no_fusion(ctx);
  const conv_geometry g =
      infer_conv(ctx, fp32_dims(ctx, "Input"), fp32_dims(ctx, "Filter"), ctx.attrs());
  ctx.set_outputs("Output", g.out, dtype::fp32);
}

/// Input@GRAD and Filter@GRAD get the dims of Input and Filter.
void infer_conv2d_grad(shape_context& ctx) {
  expect_no_fusion(ctx);
  const shape_t& input = fp32_dims(ctx, "Input");
  const shape_t& filter = fp32_dims(ctx, "Filter");
  const conv_geometry g = infer_conv(ctx, input, filter, ctx.attrs());
  ctx.expect(dims_compatible(fp32_dims(ctx, "Output@GRAD"), g.out),
             "Output@GRAD " + to_string(ctx.input_dims("Output@GRAD")) +
                 " does not match the output " + to_string(g.out));
  ctx.set_outputs(grad_name("Input"), input, dtype::fp32);
  ctx.set_outputs(grad_name("Filter"), filter, dtype::fp32);
}

/// Paddle 2.6's conv2d attributes with its defaults: the geometry, then the extras
/// (cuDNN, oneDNN, quantisation) that Paddle writes into saved programs.
std::vector<attr_spec> conv_attrs() {
  return {{"strides", std::vector<std::int32_t>{1, 1}},
          {"paddings", std::vector<std::int32_t>{0, 0}},
          {"padding_algorithm", std::string("EXPLICIT")},
          {"groups", std::int32_t{1}},
          {"dilations", std::vector<std::int32_t>{1, 1}},
          {"data_format", std::string("NCHW")},
          {"is_test", false},
          {"use_cudnn", false},
          {"use_mkldnn", false},
          {"use_quantizer", false},
          {"mkldnn_data_type", std::string("float32")},
          {"exhaustive_search", false},
          {"workspace_size_MB", std::int32_t{512}},
          {"use_addto", false},
          {"force_fp32_output", false},
          {"fuse_relu", false},
          {"fuse_relu_before_depthwise_conv", false},
          {"fuse_activation", std::string()},
          {"fuse_alpha", 0.f},
          {"fuse_beta", 0.f},
          {"fuse_residual_connection", false},
          {"Scale_in", 1.f},
          {"Scale_out", 1.f},
          {"Scale_in_eltwise", 1.f},
          {"Scale_weights", std::vector<float>{1.f}}};
}

} // namespace

void register_conv_ops(op_registry& r) {
  for (const char* type : {"conv2d", "depthwise_conv2d"})
    add_with_grad(r,
                  {.type = type,
                   .inputs = {{"Input"},
                              {"Filter"},
                              {.name = "Bias", .dispensable = true},
                              {.name = "ResidualData", .dispensable = true}},
                   .outputs = {{"Output"}},
                   .attrs = conv_attrs(),
                   .infer_shape = infer_conv2d,
                   .make_grad = {}},
                  {.forward_inputs = {"Input", "Filter"},
                   .forward_outputs = {},
                   .output_grads = {"Output"},
                   .input_grads = {"Input", "Filter"}},
                  infer_conv2d_grad);
}

} // namespace pe

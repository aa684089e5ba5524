// Schemas of lookup_table_v2 (nn.Embedding) and lookup_table_v2_grad as Paddle 2.6 writes
// them, and of lookup_table (v1, fluid.layers.embedding) and lookup_table_grad, the same but
// for Ids (INT64 [..., 1], the 1 dropped from Out: kernels/lookup_table_ops.hpp).
// v2: W [V, D] FP32 and Ids INT64 or INT32 of any dims in, Out (Ids' dims + [D]) out; the
// grad op (Paddle's LookupTableV2GradOpMaker) reads W, Ids and Out@GRAD and writes W@GRAD,
// Ids getting no gradient: a dense [V, D], or with is_sparse a SELECTED_ROWS variable
// (declared [V, D] as Paddle does; a row per id at run time), whose declaration must agree
// with is_sparse. The rules (padding_idx) are kernels/lookup_table_ops.hpp's, which the
// kernels apply too. Of the attributes only padding_idx and is_sparse mean anything here;
// the parameter-server ones Paddle also writes
// (is_distributed, remote_prefetch, entry_config, entry, table_names, height_sections, epmap,
// trainer_id, ...) are accepted and ignored, as resolve_attributes keeps any attribute it does
// not know.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops/op_helpers.hpp"
#include "kernels/lookup_table_ops.hpp"

namespace pe {

namespace {

/// W's dims, after the checks both ops share: W FP32 [V, D], Ids INT64 or INT32, padding_idx
/// in range of V where V is known.
const shape_t& lookup_table_input(const shape_context& ctx) {
  const shape_t& w = fp32_dims(ctx, "W");
  expect_lookup_table(ctx, w);
  expect_lookup_ids(ctx, ctx.input_dtype("Ids"), ctx.input_dims("Ids"), lookup_version_of(ctx.op().type()));
  lookup_padding_row(ctx, ctx.attrs().get<std::int64_t>("padding_idx"), w[0]);
  return w;
}

void infer_lookup_table(shape_context& ctx) {
  const shape_t& w = lookup_table_input(ctx);
  ctx.set_outputs("Out", lookup_out_dims(ctx.input_dims("Ids"), w[1], lookup_version_of(ctx.op().type())), dtype::fp32);
}

void infer_lookup_table_grad(shape_context& ctx) {
  const shape_t& w = lookup_table_input(ctx);
  const lookup_version version = lookup_version_of(ctx.op().type());
  const shape_t out = lookup_out_dims(ctx.input_dims("Ids"), w[1], version);
  ctx.expect(dims_compatible(fp32_dims(ctx, grad_name("Out")), out),
             "Out@GRAD " + to_string(ctx.input_dims(grad_name("Out"))) + " does not match Out " + to_string(out) +
                 (version == lookup_version::v2 ? " (Ids' dims + [D])" : " (Ids' dims but the last + [D])"));
  const std::string w_grad = grad_name("W");
  if (ctx.output_count(w_grad) > 0) {
    const bool sparse = ctx.attrs().get<bool>("is_sparse");
    ctx.expect(sparse == ctx.output_selected_rows(w_grad),
               "is_sparse is " + std::string(sparse ? "true" : "false") + " but W@GRAD is declared " +
                   (sparse ? "a dense tensor (LOD_TENSOR)" : "SELECTED_ROWS") +
                   ": a sparse lookup's gradient is SELECTED_ROWS, a dense one's a tensor");
  }
  ctx.set_outputs(w_grad, w, dtype::fp32);
}

} // namespace

void register_embedding_ops(op_registry& r) {
  const std::vector<attr_spec> attrs = {{"padding_idx", std::int64_t{no_padding}},
                                        {"is_sparse", false},
                                        {"is_distributed", false},
                                        {"remote_prefetch", false}};
  for (const char* type : {"lookup_table_v2", "lookup_table"})
    add_with_grad(r,
                  {.type = type,
                   .inputs = {{"W"}, {"Ids"}},
                   .outputs = {{"Out"}},
                   .attrs = attrs,
                   .infer_shape = infer_lookup_table,
                   .make_grad = {}},
                  {.forward_inputs = {"W", "Ids"},
                   .forward_outputs = {},
                   .output_grads = {"Out"},
                   .input_grads = {"W"},
                   .selected_rows_grads = {"W"}},
                  infer_lookup_table_grad);
}

} // namespace pe

// Schemas of the ops graph/touched_rows.hpp adds after a sparse table's optimizer op in reduce
// mode (sparse_rows_pack, sparse_rows_scatter: the table's rows a SELECTED_ROWS gradient
// touched, packed and written back), and of c_broadcast, Paddle's collective op, X and Out the
// same variable, copied from one place to every other (the SSA graph makes it a broadcast op
// handle whose root is the owner of the parameter named by `param`).
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>

#include "graph/attributes.hpp"
#include "graph/ops/op_helpers.hpp"

namespace pe {

namespace {

/// Param FP32 [height, width] and Grad rows of that table; returns Param's dims.
const shape_t& table_and_rows(const shape_context& ctx) {
  const shape_t& table = fp32_dims(ctx, "Param");
  ctx.expect(table.size() == 2, "Param must be a table [height, width], got " + to_string(table));
  ctx.expect(dims_compatible(fp32_dims(ctx, "Grad"), table),
             "Grad " + to_string(ctx.input_dims("Grad")) + " must hold rows of Param " + to_string(table));
  return table;
}

void infer_pack(shape_context& ctx) {
  const shape_t& table = table_and_rows(ctx);
  ctx.set_outputs("Out", {-1, table[1]}, dtype::fp32);
}

void infer_scatter(shape_context& ctx) {
  const shape_t& table = table_and_rows(ctx);
  ctx.expect(dims_compatible(fp32_dims(ctx, "Rows"), {-1, table[1]}),
             "Rows must be [rows, " + std::to_string(table[1]) + "], got " + to_string(ctx.input_dims("Rows")));
  ctx.set_outputs("ParamOut", table, dtype::fp32);
}

void infer_broadcast(shape_context& ctx) {
  // Out is X, overwritten in place: the SSA graph gives the collective a new version of X.
  const auto out = output_args(ctx.op(), "Out");
  ctx.expect(ctx.input_count("X") == 1 && out.size() == 1 && out[0] == ctx.input_name("X"),
             "X and Out must be one and the same variable (the copy is made in place)");
  ctx.set_outputs("Out", fp32_dims(ctx, "X"), dtype::fp32);
}

} // namespace

void register_touched_rows_ops(op_registry& r) {
  r.add({.type = "sparse_rows_pack",
         .inputs = {{"Param"}, {.name = "Grad", .selected_rows = true}},
         .outputs = {{"Out"}},
         .infer_shape = infer_pack});
  r.add({.type = "sparse_rows_scatter",
         .inputs = {{"Param"}, {.name = "Grad", .selected_rows = true}, {"Rows"}},
         .outputs = {{"ParamOut"}},
         .infer_shape = infer_scatter});
  r.add({.type = "c_broadcast",
         .inputs = {{"X"}},
         .outputs = {{"Out"}},
         .attrs = {{"root", std::int32_t{0}},
                   {"ring_id", std::int32_t{0}},
                   {"use_calc_stream", false},
                   {"param", std::string()}},
         .infer_shape = infer_broadcast});
}

} // namespace pe

// CPU kernels of the ops graph/touched_rows.hpp adds in reduce mode: sparse_rows_pack copies a
// table's rows that a SELECTED_ROWS gradient touched (distinct, ascending: the same k rows on
// every place, since every place holds the gathered gradient) into a [k, width] tensor, which
// the owner's c_broadcast sends; sparse_rows_scatter writes them back into the table. And
// c_broadcast where the world is this one place (or in the reference executor): nothing to do.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/selected_rows.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"

namespace pe {

namespace {

/// The table (Param, FP32 [height, width]) and the distinct rows of Grad, ascending.
struct touched {
  const tensor& table;
  std::vector<std::int64_t> rows;
  std::int64_t width;
};

touched touched_rows(const kernel_context& ctx) {
  const tensor& table = fp32_input(ctx, "Param");
  if (table.rank() != 2) ctx.fail("Param must be a table [height, width], got " + to_string(table.shape()));
  const tensor& grad = ctx.input("Grad");
  if (grad.sparse_rows() == nullptr) ctx.fail("Grad must hold a SELECTED_ROWS value (rows of Param)");
  if (grad.sparse_rows()->height() != table.dim(0) || (grad.rank() == 2 && grad.dim(1) != table.dim(1)))
    ctx.fail("Grad's rows are of a table " + std::to_string(grad.sparse_rows()->height()) + " high and " +
             (grad.rank() == 2 ? std::to_string(grad.dim(1)) : std::string("?")) + " wide, Param is " +
             to_string(table.shape()));
  std::vector<std::int64_t> rows = grad.sparse_rows()->rows();
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return {table, std::move(rows), table.dim(1)};
}

void pack(kernel_context& ctx) {
  const touched t = touched_rows(ctx);
  tensor& out = ctx.output("Out");
  out.resize(dtype::fp32, {static_cast<std::int64_t>(t.rows.size()), t.width});
  const auto row_bytes = static_cast<std::size_t>(t.width) * sizeof(float);
  for (std::size_t k = 0; k < t.rows.size(); ++k)
    std::memcpy(out.data<float>() + static_cast<std::int64_t>(k) * t.width, t.table.data<float>() + t.rows[k] * t.width,
                row_bytes);
}

void scatter(kernel_context& ctx) {
  const touched t = touched_rows(ctx);
  const tensor& packed = fp32_input(ctx, "Rows");
  expect_dims(ctx, "Rows", packed, {static_cast<std::int64_t>(t.rows.size()), t.width});
  tensor& table = ctx.output("ParamOut");
  if (&table != &t.table) table.copy_from(t.table); // ParamOut is normally Param itself
  const auto row_bytes = static_cast<std::size_t>(t.width) * sizeof(float);
  for (std::size_t k = 0; k < t.rows.size(); ++k)
    std::memcpy(table.data<float>() + t.rows[k] * t.width, packed.data<float>() + static_cast<std::int64_t>(k) * t.width,
                row_bytes);
}

/// c_broadcast on a world of one place: its Out is its X (the schema insists), the root's.
void world_of_one_broadcast(kernel_context&) {}

} // namespace

void register_touched_rows_kernels(kernel_registry& r) {
  r.add("sparse_rows_pack", place::kind::cpu, pack);
  r.add("sparse_rows_scatter", place::kind::cpu, scatter);
  r.add("c_broadcast", place::kind::cpu, world_of_one_broadcast);
}

} // namespace pe

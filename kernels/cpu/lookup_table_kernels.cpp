// CPU kernels of lookup_table_v2 and lookup_table_v2_grad, and of v1's lookup_table and
// lookup_table_grad (the same loops; the fronts read v1's Ids [..., 1]): loops over the ids in
// index order.
// Inputs and attributes are read and checked by kernels/lookup_table_ops.hpp's fronts, shared
// with the CUDA kernels (kernels/cuda/lookup_table_kernels.cu). The forward copies row Ids[i]
// of W into row i of Out (zeros for padding_idx); the grad zeroes W@GRAD and adds row i of
// Out@GRAD to row Ids[i], in FP32 and in index order as Paddle's CPU kernel does, so a repeated
// id sums its rows in one fixed order (the CUDA kernel adds in the same order: bit-identical).
// An id outside [0, V) that is not padding_idx fails either kernel, naming the id and V.
// With is_sparse the grad writes a SELECTED_ROWS W@GRAD instead: row k of its value is row i
// of Out@GRAD for the k-th id that is not padding_idx, and its rows are those ids (repeats
// kept; the optimizers sum them). Paddle 2.6's CPU kernel keeps padding_idx's ids too, so its
// padding row is updated by a sparse lookup; here it never is, as for a dense lookup.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/selected_rows.hpp"
#include "kernels/cpu/prefetch_rows.hpp"

#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/math_kernels.hpp"
#include "kernels/lookup_table_ops.hpp"

namespace pe {

namespace {

/// Whether `id` names the padding row (never when there is none).
bool is_padding(std::int64_t id, const lookup_geometry& g) {
  return g.padding_row != no_padding && id == g.padding_row;
}

/// Ids[i] as an int64, checked to lie in [0, V) unless it is padding_idx.
template <class Id>
std::int64_t id_at(const kernel_context& ctx, const lookup_geometry& g, const Id* ids,
                   std::int64_t i) {
  const auto id = static_cast<std::int64_t>(ids[i]);
  if (!is_padding(id, g) && (id < 0 || id >= g.rows))
    ctx.fail("Ids[" + std::to_string(i) + "] = " + std::to_string(id) + " is outside [0, " +
             std::to_string(g.rows) + ") (W has V = " + std::to_string(g.rows) +
             " rows) and is not padding_idx");
  return id;
}

/// Calls row(i, id) for each id in index order, its type that of Ids. Before each, ahead(id)
/// with the (unchecked) id prefetch_rows_ahead positions on, while there is one.
template <class Row, class Ahead>
void for_each_id(const kernel_context& ctx, const lookup_geometry& g, Row&& row, Ahead&& ahead) {
  const std::int64_t n = g.ids.numel();
  const auto visit = [&](const auto* ids) {
    constexpr auto distance = static_cast<std::int64_t>(prefetch_rows_ahead);
    for (std::int64_t i = 0; i < n; ++i) {
      if (i + distance < n) ahead(static_cast<std::int64_t>(ids[i + distance]));
      row(i, id_at(ctx, g, ids, i));
    }
  };
  if (g.ids.type() == dtype::int64)
    visit(g.ids.data<std::int64_t>());
  else
    visit(g.ids.data<std::int32_t>());
}

template <class Row>
void for_each_id(const kernel_context& ctx, const lookup_geometry& g, Row&& row) {
  for_each_id(ctx, g, std::forward<Row>(row), [](std::int64_t) {});
}

void lookup_forward(kernel_context& ctx) {
  const lookup_front f = lookup_front_of(ctx, fp32_input, bound_input);
  const lookup_geometry& g = f.g;
  write_unaliased(ctx.output("Out"), {&f.w, &g.ids}, [&](tensor& out) {
    out.resize(dtype::fp32, g.out_dims());
    const float* w = f.w.data<float>();
    float* o = out.data<float>();
    for_each_id(
        ctx, g,
        [&](std::int64_t i, std::int64_t id) {
          float* to = o + i * g.width;
          if (is_padding(id, g))
            std::fill(to, to + g.width, 0.f);
          else
            std::copy(w + id * g.width, w + (id + 1) * g.width, to);
        },
        // The rows are scattered over W: ask for one a few ids ahead (ids within W only).
        [&](std::int64_t next) {
          if (next >= 0 && next < g.rows) prefetch_floats(w + next * g.width, g.width);
        });
  });
}

/// W@GRAD as SELECTED_ROWS: the ids but padding_idx's, and their rows of Out@GRAD.
void sparse_lookup_backward(kernel_context& ctx, const lookup_grad_front& f) {
  const lookup_geometry& g = f.g;
  std::vector<std::int64_t> rows, from;
  rows.reserve(static_cast<std::size_t>(g.ids.numel()));
  from.reserve(rows.capacity());
  for_each_id(ctx, g, [&](std::int64_t i, std::int64_t id) {
    if (is_padding(id, g)) return;
    rows.push_back(id);
    from.push_back(i);
  });
  tensor value(dtype::fp32, {static_cast<std::int64_t>(rows.size()), g.width}, ctx.where());
  const float* dout = f.out_grad.data<float>();
  float* to = value.data<float>();
  for (std::size_t k = 0; k < from.size(); ++k)
    std::copy(dout + from[k] * g.width, dout + (from[k] + 1) * g.width, to + static_cast<std::int64_t>(k) * g.width);
  value.set_sparse_rows(std::make_shared<const selected_rows>(std::move(rows), g.rows, "W@GRAD"));
  ctx.output("W@GRAD") = std::move(value);
}

void lookup_backward(kernel_context& ctx) {
  const lookup_grad_front f = lookup_grad_front_of(ctx, fp32_input, bound_input);
  if (ctx.attrs().get<bool>("is_sparse")) return sparse_lookup_backward(ctx, f);
  const lookup_geometry& g = f.g;
  write_unaliased(ctx.output("W@GRAD"), {&f.out_grad, &g.ids}, [&](tensor& dw_out) {
    dw_out.resize(dtype::fp32, f.w_dims);
    float* dw = dw_out.data<float>();
    std::fill(dw, dw + dw_out.numel(), 0.f);
    const float* dout = f.out_grad.data<float>();
    for_each_id(ctx, g, [&](std::int64_t i, std::int64_t id) {
      if (is_padding(id, g)) return;
      float* to = dw + id * g.width;
      const float* from = dout + i * g.width;
      for (std::int64_t j = 0; j < g.width; ++j) to[j] += from[j];
    });
  });
}

} // namespace

void register_lookup_table_kernels(kernel_registry& r) {
  r.add("lookup_table_v2", place::kind::cpu, lookup_forward);
  r.add("lookup_table_v2_grad", place::kind::cpu, lookup_backward);
  r.add("lookup_table", place::kind::cpu, lookup_forward); // v1: the fronts read Ids as v1's
  r.add("lookup_table_grad", place::kind::cpu, lookup_backward);
}

} // namespace pe

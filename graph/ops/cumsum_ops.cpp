// Schema of cumsum (paddle.cumsum): Out = the running sum of X along `axis` (of X flattened
// under `flatten`), `exclusive` leaving each element out of its own sum, `reverse` summing
// from the far end. Computes in X's dtype (FP32, INT64, INT32). Its grad is, as Paddle's
// CumsumGradMaker emits it, a cumsum of Out@GRAD into X@GRAD with `reverse` flipped.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/attributes.hpp"
#include "graph/ops/op_helpers.hpp"
#include "kernels/cumsum_ops.hpp"

namespace pe {

namespace {

/// Out has X's dtype: FP32, or INT64/INT32 (position ids as cumsum(ones_like(ids))).
void infer_cumsum(shape_context& ctx) {
  const attribute_map& a = ctx.attrs();
  const dtype type = ctx.input_dtype("X");
  ctx.expect(cumsum_dtype(type), "X must be FP32, INT64 or INT32, got " + to_string(type));
  const shape_t& x = ctx.input_dims("X");
  ctx.set_outputs("Out",
                  cumsum_geometry_of(ctx, x, a.get<std::int32_t>("axis"), a.get<bool>("flatten")).out_dims,
                  type);
}

} // namespace

void register_cumsum_ops(op_registry& r) {
  op_schema cumsum{.type = "cumsum",
                   .inputs = {{"X"}},
                   .outputs = {{"Out"}},
                   .attrs = {{"axis", std::int32_t{-1}},
                             {"flatten", false},
                             {"exclusive", false},
                             {"reverse", false}},
                   .infer_shape = infer_cumsum,
                   .make_grad = {}};
  // The schema copy resolves the attributes. Under flatten the cumsum of Out@GRAD would be
  // 1-D where X@GRAD has X's dims: refused rather than emitted wrong.
  cumsum.make_grad = [schema = cumsum](const proto::OpDesc& fwd) {
    const attribute_map a = resolve_attributes(fwd, schema);
    if (a.get<bool>("flatten"))
      throw error("cumsum with flatten = true has no gradient here: X@GRAD would be 1-D, "
                  "not X's dims (reshape X to 1-D and cumsum along axis 0 instead)");
    proto::OpDesc grad;
    grad.set_type("cumsum");
    set_input(grad, "X", {grad_name(output_args(fwd, "Out").at(0))});
    set_output(grad, "Out", {grad_name(input_args(fwd, "X").at(0))});
    *grad.mutable_attrs() = fwd.attrs();
    set_attr(grad, "reverse", !a.get<bool>("reverse"));
    return std::vector<proto::OpDesc>{grad};
  };
  r.add(std::move(cumsum));
}

} // namespace pe

// Schemas of the loss and metric ops: softmax_with_cross_entropy, top_k, top_k_v2, accuracy
// and the grad ops of the first three.
#include "graph/op_registry.hpp"

#include <cstdint>

#include "devices/math_shapes.hpp"

namespace pe {

namespace {

/// `dims` with its last dimension replaced by `last` (the shape of Loss, of top_k's outputs).
shape_t with_last_dim(shape_t dims, std::int64_t last) {
  dims.back() = last;
  return dims;
}

/// Whether all but the last dimension of `a` and `b` agree where both are known.
bool leading_dims_compatible(const shape_t& a, const shape_t& b) {
  return a.size() == b.size() && dims_compatible(with_last_dim(a, -1), with_last_dim(b, -1));
}

void infer_softmax_with_cross_entropy(shape_context& ctx) {
  const shape_t& logits = ctx.input_dims("Logits");
  ctx.expect(!logits.empty(), "Logits must have rank >= 1, got " + to_string(logits));
  ctx.expect(ctx.input_dtype("Logits") == dtype::fp32,
             "Logits must be FP32, got " + to_string(ctx.input_dtype("Logits")));
  const auto axis = ctx.attrs().get<std::int32_t>("axis");
  const auto rank = static_cast<std::int32_t>(logits.size());
  ctx.expect(axis == -1 || axis == rank - 1,
             "only the last axis is supported, got axis " + std::to_string(axis) +
                 " for Logits " + to_string(logits));
  ctx.expect(ctx.attrs().get<bool>("use_softmax"),
             "use_softmax = false (Logits already normalised) is not supported");
  const shape_t& label = ctx.input_dims("Label");
  if (ctx.attrs().get<bool>("soft_label")) {
    ctx.expect(ctx.input_dtype("Label") == dtype::fp32,
               "a soft Label must be FP32, got " + to_string(ctx.input_dtype("Label")));
    ctx.expect(dims_compatible(label, logits), "a soft Label must have the dims of Logits " +
                                                   to_string(logits) + ", got " + to_string(label));
  } else {
    ctx.expect(ctx.input_dtype("Label") == dtype::int64,
               "Label must be INT64, got " + to_string(ctx.input_dtype("Label")));
    ctx.expect(leading_dims_compatible(label, logits) && (label.back() == 1 || label.back() == -1),
               "Label must have the dims of Logits " + to_string(logits) +
                   " with last dim 1, got " + to_string(label));
  }
  ctx.set_outputs("Softmax", logits, dtype::fp32);
  ctx.set_outputs("Loss", with_last_dim(logits, 1), dtype::fp32);
}

void infer_softmax_with_cross_entropy_grad(shape_context& ctx) {
  const shape_t& softmax = ctx.input_dims("Softmax");
  ctx.expect(!softmax.empty(), "Softmax must have rank >= 1, got " + to_string(softmax));
  const shape_t& loss_grad = ctx.input_dims(grad_name("Loss"));
  ctx.expect(dims_compatible(loss_grad, with_last_dim(softmax, 1)),
             "Loss@GRAD must have dims " + to_string(with_last_dim(softmax, 1)) + ", got " +
                 to_string(loss_grad));
  ctx.set_outputs(grad_name("Logits"), softmax, dtype::fp32);
}

void infer_top_k(shape_context& ctx) {
  const shape_t& x = ctx.input_dims("X");
  ctx.expect(!x.empty(), "X must have rank >= 1, got " + to_string(x));
  const auto k = ctx.attrs().get<std::int32_t>("k");
  ctx.expect(k >= 1, "k must be >= 1, got " + std::to_string(k));
  ctx.expect(x.back() < 0 || k <= x.back(),
             "k = " + std::to_string(k) + " exceeds the last dim of X " + to_string(x));
  ctx.set_outputs("Out", with_last_dim(x, k), dtype::fp32);
  ctx.set_outputs("Indices", with_last_dim(x, k), dtype::int64);
}

void infer_top_k_grad(shape_context& ctx) {
  const shape_t& indices = ctx.input_dims("Indices");
  const shape_t& out_grad = ctx.input_dims(grad_name("Out"));
  ctx.expect(dims_compatible(indices, out_grad), "Out@GRAD dims " + to_string(out_grad) +
                                                     " differ from Indices dims " +
                                                     to_string(indices));
  ctx.set_outputs(grad_name("X"), ctx.input_dims("X"), dtype::fp32);
}

/// top_k_v2: top_k along `axis` (negative: from the back), Out and Indices with k there.
/// The K input (k computed at run time) is not supported.
void infer_top_k_v2(shape_context& ctx) {
  ctx.expect(ctx.input_count("K") == 0, "the K input is not supported; give the k attribute");
  const shape_t& x = ctx.input_dims("X");
  ctx.expect(ctx.input_dtype("X") == dtype::fp32,
             "X must be FP32, got " + to_string(ctx.input_dtype("X")));
  const std::size_t axis =
      normalize_axis(ctx, "axis", ctx.attrs().get<std::int32_t>("axis"), x.size());
  const auto k = ctx.attrs().get<std::int32_t>("k");
  ctx.expect(k >= 1, "k must be >= 1, got " + std::to_string(k));
  ctx.expect(x[axis] < 0 || k <= x[axis], "k = " + std::to_string(k) + " exceeds dim " +
                                              std::to_string(axis) + " of X " + to_string(x));
  shape_t out = x;
  out[axis] = k;
  ctx.set_outputs("Out", out, dtype::fp32);
  ctx.set_outputs("Indices", out, dtype::int64);
}

void infer_accuracy(shape_context& ctx) {
  const shape_t& out = ctx.input_dims("Out");
  const shape_t& indices = ctx.input_dims("Indices");
  const shape_t& label = ctx.input_dims("Label");
  ctx.expect(indices.size() == 2 && dims_compatible(out, indices),
             "Out and Indices must be [N, k] alike, got " + to_string(out) + " and " +
                 to_string(indices));
  ctx.expect(ctx.input_dtype("Indices") == dtype::int64 && ctx.input_dtype("Label") == dtype::int64,
             "Indices and Label must be INT64");
  ctx.expect(dims_compatible(label, {indices[0], 1}),
             "Label must be [N, 1] with N = " + std::to_string(indices[0]) + ", got " +
                 to_string(label));
  ctx.set_outputs("Accuracy", {1}, dtype::fp32);
  ctx.set_outputs("Correct", {1}, dtype::int32);
  ctx.set_outputs("Total", {1}, dtype::int32);
}

} // namespace

void register_loss_ops(op_registry& r) {
  // numeric_stable_mode is accepted for compatibility; the kernel always subtracts the row
  // maximum, as Paddle's CPU kernel does.
  std::vector<attr_spec> ce_attrs = {{"soft_label", false},
                                     {"ignore_index", std::int32_t{-100}},
                                     {"axis", std::int32_t{-1}},
                                     {"numeric_stable_mode", true},
                                     {"use_softmax", true}};
  r.add({.type = "softmax_with_cross_entropy",
         .inputs = {{"Logits"}, {"Label"}},
         .outputs = {{"Softmax"}, {"Loss"}},
         .attrs = ce_attrs,
         .infer_shape = infer_softmax_with_cross_entropy,
         .make_grad = make_default_grad({.forward_inputs = {"Label"},
                                         .forward_outputs = {"Softmax"},
                                         .output_grads = {"Loss"},
                                         .input_grads = {"Logits"}})});
  r.add({.type = "softmax_with_cross_entropy_grad",
         .inputs = {{"Label"}, {"Softmax"}, {grad_name("Loss")}},
         .outputs = {{grad_name("Logits")}},
         .attrs = ce_attrs,
         .infer_shape = infer_softmax_with_cross_entropy_grad,
         .make_grad = {}});

  r.add({.type = "top_k",
         .inputs = {{"X"}},
         .outputs = {{"Out"}, {"Indices"}},
         .attrs = {{"k", std::int32_t{1}}},
         .infer_shape = infer_top_k,
         .make_grad = make_default_grad({.forward_inputs = {"X"},
                                         .forward_outputs = {"Indices"},
                                         .output_grads = {"Out"},
                                         .input_grads = {"X"}})});
  r.add({.type = "top_k_grad",
         .inputs = {{"X"}, {"Indices"}, {grad_name("Out")}},
         .outputs = {{grad_name("X")}},
         .attrs = {{"k", std::int32_t{1}}},
         .infer_shape = infer_top_k_grad,
         .make_grad = {}});

  const std::vector<attr_spec> top_k_v2_attrs = {{"k", std::int32_t{1}},
                                                 {"axis", std::int32_t{-1}},
                                                 {"largest", true},
                                                 {"sorted", true}};
  r.add({.type = "top_k_v2",
         .inputs = {{"X"}, {.name = "K", .dispensable = true}},
         .outputs = {{"Out"}, {"Indices"}},
         .attrs = top_k_v2_attrs,
         .infer_shape = infer_top_k_v2,
         .make_grad = make_default_grad({.forward_inputs = {"X"},
                                         .forward_outputs = {"Indices"},
                                         .output_grads = {"Out"},
                                         .input_grads = {"X"}})});
  r.add({.type = "top_k_v2_grad",
         .inputs = {{"X"}, {"Indices"}, {grad_name("Out")}},
         .outputs = {{grad_name("X")}},
         .attrs = top_k_v2_attrs,
         .infer_shape = infer_top_k_grad,
         .make_grad = {}});

  r.add({.type = "accuracy",
         .inputs = {{"Out"}, {"Indices"}, {"Label"}},
         .outputs = {{"Accuracy"}, {"Correct"}, {"Total"}},
         .attrs = {},
         .infer_shape = infer_accuracy,
         .make_grad = {}});
}

} // namespace pe

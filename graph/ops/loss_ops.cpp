// Schemas of the loss and metric ops: softmax_with_cross_entropy, cross_entropy,
// cross_entropy2, top_k, top_k_v2, accuracy and the grad ops of all but accuracy.
//
// cross_entropy and cross_entropy2 take probabilities (a softmax's Out), as does
// softmax_with_cross_entropy with use_softmax = false. cross_entropy2 (hard labels only) also
// outputs MatchX, each row's probability of its label, and XShape, [X's dims, 0]: its grad op
// cross_entropy_grad2 reads those instead of X.
#include "graph/op_registry.hpp"

#include <cstdint>
#include <string>

#include "graph/ops/op_helpers.hpp"
#include "kernels/math_shapes.hpp"

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

/// The FP32 input `slot` (Logits, X) of rank >= 1 whose last dim holds the classes.
const shape_t& class_dims(const shape_context& ctx, const std::string& slot) {
  const shape_t& dims = fp32_dims(ctx, slot);
  ctx.expect(!dims.empty(), slot + " must have rank >= 1, got " + to_string(dims));
  return dims;
}

/// Checks Label against the dims `like` of input `slot`: a soft label is FP32 with those
/// dims, a hard one INT64 with those dims but last dim 1.
void expect_label(const shape_context& ctx, const std::string& slot, const shape_t& like,
                  bool soft_label) {
  const shape_t& label = ctx.input_dims("Label");
  if (soft_label) {
    ctx.expect(ctx.input_dtype("Label") == dtype::fp32,
               "a soft Label must be FP32, got " + to_string(ctx.input_dtype("Label")));
    ctx.expect(dims_compatible(label, like), "a soft Label must have the dims of " + slot + " " +
                                                 to_string(like) + ", got " + to_string(label));
  } else {
    ctx.expect(ctx.input_dtype("Label") == dtype::int64,
               "Label must be INT64, got " + to_string(ctx.input_dtype("Label")));
    ctx.expect(leading_dims_compatible(label, like) && (label.back() == 1 || label.back() == -1),
               "Label must have the dims of " + slot + " " + to_string(like) +
                   " with last dim 1, got " + to_string(label));
  }
}

void infer_softmax_with_cross_entropy(shape_context& ctx) {
  const shape_t& logits = class_dims(ctx, "Logits");
  const auto axis = ctx.attrs().get<std::int32_t>("axis");
  const auto rank = static_cast<std::int32_t>(logits.size());
  ctx.expect(axis == -1 || axis == rank - 1,
             "only the last axis is supported, got axis " + std::to_string(axis) +
                 " for Logits " + to_string(logits));
  expect_label(ctx, "Logits", logits, ctx.attrs().get<bool>("soft_label"));
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

/// cross_entropy: Y has X's dims with last dim 1.
void infer_cross_entropy(shape_context& ctx) {
  const shape_t& x = class_dims(ctx, "X");
  expect_label(ctx, "X", x, ctx.attrs().get<bool>("soft_label"));
  ctx.set_outputs("Y", with_last_dim(x, 1), dtype::fp32);
}

/// X@GRAD has X's dims; Y@GRAD must have Y's.
void infer_cross_entropy_grad(shape_context& ctx) {
  const shape_t& x = class_dims(ctx, "X");
  expect_label(ctx, "X", x, ctx.attrs().get<bool>("soft_label"));
  const shape_t& y_grad = fp32_dims(ctx, grad_name("Y"));
  ctx.expect(dims_compatible(y_grad, with_last_dim(x, 1)),
             "Y@GRAD must have dims " + to_string(with_last_dim(x, 1)) + ", got " +
                 to_string(y_grad));
  ctx.set_outputs(grad_name("X"), x, dtype::fp32);
}

/// cross_entropy2's XShape: X's dims followed by 0 (no elements), as Paddle appends it.
shape_t cross_entropy2_xshape(shape_t x) {
  x.push_back(0);
  return x;
}

/// cross_entropy2 (hard labels): Y and MatchX have X's dims with last dim 1.
void infer_cross_entropy2(shape_context& ctx) {
  const shape_t& x = class_dims(ctx, "X");
  expect_label(ctx, "X", x, false);
  ctx.set_outputs("Y", with_last_dim(x, 1), dtype::fp32);
  ctx.set_outputs("MatchX", with_last_dim(x, 1), dtype::fp32);
  ctx.set_outputs("XShape", cross_entropy2_xshape(x), dtype::fp32);
}

/// cross_entropy_grad2: X@GRAD gets the dims XShape records; MatchX, Label and Y@GRAD must
/// have them with last dim 1.
void infer_cross_entropy_grad2(shape_context& ctx) {
  const shape_t& xshape = ctx.input_dims("XShape");
  ctx.expect(xshape.size() >= 2 && xshape.back() == 0,
             "XShape must be [X's dims, 0], got " + to_string(xshape));
  const shape_t x(xshape.begin(), xshape.end() - 1);
  expect_label(ctx, "X", x, false);
  for (const std::string& slot : {std::string("MatchX"), grad_name("Y")}) {
    const shape_t& dims = fp32_dims(ctx, slot);
    ctx.expect(dims_compatible(dims, with_last_dim(x, 1)),
               slot + " must have dims " + to_string(with_last_dim(x, 1)) + ", got " +
                   to_string(dims));
  }
  ctx.set_outputs(grad_name("X"), x, dtype::fp32);
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
  // maximum, as Paddle's CPU kernel does. use_softmax = false: Logits are probabilities
  // already (Paddle 2.x's cross_entropy(..., use_softmax=False)), Softmax is a copy of them.
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

  const std::vector<attr_spec> cross_entropy_attrs = {{"soft_label", false},
                                                      {"ignore_index", std::int32_t{-100}}};
  add_with_grad(r,
                {.type = "cross_entropy",
                 .inputs = {{"X"}, {"Label"}},
                 .outputs = {{"Y"}},
                 .attrs = cross_entropy_attrs,
                 .infer_shape = infer_cross_entropy,
                 .make_grad = {}},
                {.forward_inputs = {"X", "Label"},
                 .forward_outputs = {},
                 .output_grads = {"Y"},
                 .input_grads = {"X"}},
                infer_cross_entropy_grad);

  // Paddle names cross_entropy2's grad op cross_entropy_grad2, not cross_entropy2_grad.
  const std::vector<attr_spec> cross_entropy2_attrs = {{"ignore_index", std::int32_t{-100}}};
  const grad_maker_fn cross_entropy2_grad = make_default_grad({.forward_inputs = {"Label"},
                                                               .forward_outputs = {"MatchX",
                                                                                   "XShape"},
                                                               .output_grads = {"Y"},
                                                               .input_grads = {"X"}});
  r.add({.type = "cross_entropy2",
         .inputs = {{"X"}, {"Label"}},
         .outputs = {{"Y"}, {"XShape"}, {"MatchX"}},
         .attrs = cross_entropy2_attrs,
         .infer_shape = infer_cross_entropy2,
         .make_grad = [cross_entropy2_grad](const proto::OpDesc& fwd) {
           std::vector<proto::OpDesc> ops = cross_entropy2_grad(fwd);
           ops.at(0).set_type("cross_entropy_grad2");
           return ops;
         }});
  r.add({.type = "cross_entropy_grad2",
         .inputs = {{"MatchX"}, {"XShape"}, {"Label"}, {grad_name("Y")}},
         .outputs = {{.name = grad_name("X"), .dispensable = true}},
         .attrs = cross_entropy2_attrs,
         .infer_shape = infer_cross_entropy_grad2,
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

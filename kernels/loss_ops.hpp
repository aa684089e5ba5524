#pragma once
// The loss and metric ops (softmax_with_cross_entropy, cross_entropy, cross_entropy2, top_k,
// top_k_v2, accuracy and the grads of all but accuracy) on every kind of place: shared here
// is each op's front, the attributes read, the dtypes and dims of the inputs checked against
// each other and the output dims, with the failure messages, and the registration under the
// op types. A place's kernels bring the arithmetic (kernels/cpu/loss_kernels.cpp: loops that
// also check label values; kernels/cuda/loss_kernels.cu: loss_plans.hpp's maps).
#include <cstdint>
#include <string_view>

#include "kernels/kernel.hpp"
#include "kernels/op_inputs.hpp"

namespace pe {

/// A tensor of rank >= 1 seen as a matrix of `rows` rows of `cols` elements.
struct row_layout {
  std::int64_t rows, cols;
};

/// `t` (input `slot`) as rows of its last dim; fails on a scalar.
row_layout rows_of(const kernel_context& ctx, std::string_view slot, const tensor& t);

/// Fails unless input `slot` (`t`) has dtype `wanted`.
void expect_dtype(const kernel_context& ctx, std::string_view slot, const tensor& t, dtype wanted);

/// `dims` with its last dimension replaced by `last`.
shape_t with_last_dim(shape_t dims, std::int64_t last);

/// `dims` with dimension `axis` replaced by `size`.
shape_t with_dim(shape_t dims, std::size_t axis, std::int64_t size);

/// The ignore_index attribute: the hard label of rows that count for nothing.
std::int64_t ignore_index(const kernel_context& ctx);

/// Checks Label against Logits (or Softmax, or X) `like`: a soft label is FP32 with its dims,
/// a hard one INT64 with its dims but last dim 1.
void check_label(const kernel_context& ctx, const tensor& label, const tensor& like, bool soft);

/// The front of a cross-entropy over probabilities X (Loss, with dims X's with last dim 1):
/// X's rows, after checking Label against X.
row_layout probability_xent_rows(const kernel_context& ctx, const tensor& x, const tensor& label, bool soft);

/// The front of that cross-entropy's X@GRAD: probability_xent_rows, and `loss_grad` (input
/// `loss_slot`) checked to be FP32 with Loss's dims.
row_layout probability_xent_grad_rows(const kernel_context& ctx, const tensor& x, const tensor& label,
                                      bool soft, const tensor& loss_grad, std::string_view loss_slot);

/// cross_entropy_grad2's X dims, XShape's without its trailing 0 (XShape checked first),
/// and its inputs read with `input`: Label (INT64), MatchX and Y@GRAD (FP32), checked to have
/// X's dims with last dim 1.
struct cross_entropy_grad2_front {
  shape_t x_dims;
  const tensor& label;
  const tensor& match_x;
  const tensor& y_grad;
};
cross_entropy_grad2_front cross_entropy_grad2_front_of(const kernel_context& ctx, input_fn input);

/// softmax_with_cross_entropy's attributes and Logits' (or, for the grad, Softmax's) rows.
struct softmax_xent_front {
  row_layout rows;
  bool soft, use_softmax;
};

/// The forward's front: Logits checked to be FP32 with axis its last; Label is left to check
/// (with use_softmax = false the op is a cross-entropy over probabilities, which checks it).
softmax_xent_front softmax_xent_front_of(const kernel_context& ctx, const tensor& logits);

/// The grad's front: Softmax checked to be FP32; with use_softmax, also Loss@GRAD FP32 and
/// Label and Loss@GRAD against Softmax (without, the probability grad checks them).
softmax_xent_front softmax_xent_grad_front_of(const kernel_context& ctx, const tensor& softmax,
                                              const tensor& label, const tensor& loss_grad);

/// top_k's k along `axis` of X, after checking X is FP32 and k in [1, X's dim there].
std::int64_t top_k_count(const kernel_context& ctx, const tensor& x, std::size_t axis);

/// The k of a top-k grad along `axis`: Indices' dim there, after checking Indices (INT64)
/// and Out@GRAD (FP32) have X's dims with k there. X is read for its dims only.
std::int64_t top_k_grad_count(const kernel_context& ctx, const tensor& x, const tensor& indices,
                              const tensor& out_grad, std::size_t axis);

/// accuracy's Indices as rows x k, after checking Out and Indices are both [N, k] and Label
/// [N, 1], Indices and Label INT64.
row_layout accuracy_rows(const kernel_context& ctx, const tensor& out, const tensor& indices,
                         const tensor& label);

/// A place's loss kernels; select_top_k and scatter_top_k_grad run top_k's (axis X's last,
/// largest first) and top_k_v2's (its axis and largest attributes; the K input refused).
struct loss_kernels {
  kernel_fn softmax_with_cross_entropy, softmax_with_cross_entropy_grad;
  kernel_fn cross_entropy, cross_entropy_grad, cross_entropy2, cross_entropy_grad2;
  kernel_fn accuracy;
  void (*select_top_k)(kernel_context& ctx, std::size_t axis, bool largest);
  void (*scatter_top_k_grad)(kernel_context& ctx, std::size_t axis);
};

/// Registers `k` under the loss ops' types for places of kind `kind`.
void register_loss_ops(kernel_registry& r, place::kind kind, const loss_kernels& k);

} // namespace pe

#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/attribute.hpp"
#include "core/tensor.hpp"
#include "graph/proto.hpp"

namespace pe {

/// One input or output slot of an op ("X", "Out", ...).
struct slot_spec {
  std::string name;
  bool duplicable = false;  ///< may bind several variables (sum's X)
  bool dispensable = false; ///< may be absent or empty
  /// May bind a SELECTED_ROWS variable (an optimizer's Grad, a sparse lookup's W@GRAD);
  /// validate_program refuses one bound to any other slot.
  bool selected_rows = false;
  /// May be bound to a variable that holds no value when the op runs: an output of a branch
  /// that did not run (select_input's X, conditional_block's Input). The kernel checks what
  /// it reads; bound_op does not refuse the op for it.
  bool unwritten_ok = false;
};

/// One attribute of an op. The default's alternative is the attribute's type; a required
/// attribute has no default to fill in but still names its type through `value`.
struct attr_spec {
  std::string name;
  attribute value;
  bool required = false;
};

/// What shape inference knows of a variable: its dtype and dims (-1 = unknown, i.e. the
/// batch dimension).
struct var_info {
  dtype type = dtype::fp32;
  shape_t dims;
  /// A SELECTED_ROWS variable: `dims` are those of the [height, width] table it holds rows
  /// of (Paddle declares them so), its value at run time has a row per entry instead.
  bool selected_rows = false;
};

using var_table = std::map<std::string, var_info, std::less<>>;

/// True when two dims lists have the same rank and agree wherever both are known.
bool dims_compatible(const shape_t& a, const shape_t& b);

/// The view shape inference has of one op: input vars' dims and dtypes, attributes with
/// defaults, and a place to put the inferred outputs. The caller (validator or builder)
/// decides what to do with `inferred()`.
class shape_context {
 public:
  shape_context(const proto::OpDesc& op, const attribute_map& attrs, const var_table& vars,
                int op_index);

  const proto::OpDesc& op() const { return op_; }
  const attribute_map& attrs() const { return attrs_; }

  std::size_t input_count(std::string_view slot) const;
  std::size_t output_count(std::string_view slot) const;
  const std::string& input_name(std::string_view slot, std::size_t i = 0) const;
  const shape_t& input_dims(std::string_view slot, std::size_t i = 0) const;
  dtype input_dtype(std::string_view slot, std::size_t i = 0) const;
  /// Whether output `slot`[i] is bound and declared SELECTED_ROWS.
  bool output_selected_rows(std::string_view slot, std::size_t i = 0) const;

  /// Records the inferred dims and dtype of output `slot`[i]; ignored when the slot is absent.
  void set_output(std::string_view slot, std::size_t i, shape_t dims, dtype type);
  /// set_output for every variable bound to `slot`.
  void set_outputs(std::string_view slot, const shape_t& dims, dtype type);

  /// Throws pe::error "op #<index> (<type>): <message>".
  [[noreturn]] void fail(const std::string& message) const;

  /// Fails with `message` unless `condition` holds.
  void expect(bool condition, const std::string& message) const {
    if (!condition) fail(message);
  }

  const std::vector<std::pair<std::string, var_info>>& inferred() const { return inferred_; }

 private:
  const var_info& input_var(std::string_view slot, std::size_t i) const;

  const proto::OpDesc& op_;
  const attribute_map& attrs_;
  const var_table& vars_;
  int op_index_;
  std::vector<std::pair<std::string, var_info>> inferred_;
};

using shape_fn = std::function<void(shape_context&)>;
using grad_maker_fn = std::function<std::vector<proto::OpDesc>(const proto::OpDesc& forward)>;

/// Everything the engine knows about an op type apart from its kernels.
struct op_schema {
  std::string type;
  std::vector<slot_spec> inputs = {};
  std::vector<slot_spec> outputs = {};
  std::vector<attr_spec> attrs = {};
  shape_fn infer_shape = {};
  /// Emits the grad op descs of a forward op; empty for ops without gradient.
  grad_maker_fn make_grad = {};
  /// Ops the executor performs itself (feed, fetch): they have no kernel.
  bool host_op = false;
  /// The op runs the block its BLOCK attribute `sub_block` names (conditional_block): the
  /// attribute is required, the block is validated with the op, and bound_op binds the
  /// block's ops for the op's kernel to run (kernel_context::run_sub_block).
  bool runs_sub_block = false;

  const slot_spec* find_input(std::string_view slot) const;
  const slot_spec* find_output(std::string_view slot) const;
  const attr_spec* find_attr(std::string_view name) const;
};

/// "x" -> "x@GRAD" (names of gradient variables and of grad-op slots alike).
std::string grad_name(std::string_view name);

/// Describes Paddle's default grad op "<type>_grad": it receives the forward inputs in
/// `forward_inputs`, the forward outputs in `forward_outputs`, "<O>@GRAD" for each slot O in
/// `output_grads`, and produces "<I>@GRAD" for each slot I in `input_grads`. Attributes
/// are copied from the forward op.
struct default_grad {
  std::vector<std::string> forward_inputs = {};
  std::vector<std::string> forward_outputs = {};
  std::vector<std::string> output_grads = {};
  std::vector<std::string> input_grads = {};
  /// Of input_grads, those whose gradient may be SELECTED_ROWS (a sparse lookup's W).
  std::vector<std::string> selected_rows_grads = {};
};
grad_maker_fn make_default_grad(default_grad spec);

/// The op schemas by type. Filled explicitly at first use by the register_*_ops functions.
class op_registry {
 public:
  /// The process-wide registry, with every built-in op registered.
  static const op_registry& global();

  /// Adds ops of the caller's to global(), for a test binary's own ops (a kernel that blocks
  /// until released): `add` runs once, when global() is first built, after the built-in
  /// ops. Throws pe::error once global() was built: extend it before any program is read.
  static void extend(std::function<void(op_registry&)> add);

  void add(op_schema schema);

  /// nullptr when the type is unknown.
  const op_schema* find(std::string_view type) const;

  std::vector<std::string> types() const;

 private:
  std::map<std::string, op_schema, std::less<>> schemas_;
};

/// The attributes of `op` with the schema's defaults filled in. Throws pe::error naming the
/// attribute (callers add the op) when a required one is missing or one has the wrong type.
attribute_map resolve_attributes(const proto::OpDesc& op, const op_schema& schema);

// The op groups (graph/ops/*.cpp).
void register_math_ops(op_registry& r);      // mul, matmul_v2, matmul, relu, tanh, sigmoid, scale, sum, mean, reduce_mean, reduce_sum
void register_elementwise_ops(op_registry& r); // elementwise_add, _sub, _mul, _div, _max, _min, _pow
void register_activation_ops(op_registry& r); // leaky_relu, gelu, softmax, log_softmax
void register_shape_ops(op_registry& r);     // assign, reshape2, flatten_contiguous_range, transpose2, squeeze2, unsqueeze2, concat, split, cast
void register_loss_ops(op_registry& r);      // softmax_with_cross_entropy, cross_entropy, cross_entropy2, top_k, top_k_v2, accuracy
void register_dropout_ops(op_registry& r);   // dropout
void register_init_ops(op_registry& r);      // fill_constant, fill_any_like, uniform_random, gaussian_random
void register_optimizer_ops(op_registry& r); // sgd, momentum, adam
void register_io_ops(op_registry& r);        // feed, fetch
void register_conv_ops(op_registry& r);      // conv2d, depthwise_conv2d
void register_pool_ops(op_registry& r);      // pool2d
void register_norm_ops(op_registry& r);      // batch_norm, sync_batch_norm, layer_norm
void register_touched_rows_ops(op_registry& r); // sparse_rows_pack, sparse_rows_scatter, c_broadcast
void register_sync_batch_norm_ops(op_registry& r); // sync_batch_norm_stats, _apply, _grad_stats, _grad_apply, c_allreduce_sum
void register_embedding_ops(op_registry& r); // lookup_table_v2
void register_global_norm_ops(op_registry& r); // sqrt, squared_l2_norm
void register_cumsum_ops(op_registry& r);    // cumsum
void register_slice_ops(op_registry& r);     // slice
void register_condition_ops(op_registry& r); // less_than, less_equal, greater_than, greater_equal, equal, not_equal, logical_not, logical_and, logical_or, logical_xor
void register_control_flow_ops(op_registry& r); // conditional_block, select_input, increment

} // namespace pe

#include "graph/builder.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "graph/attributes.hpp"
#include "graph/op_registry.hpp"
#include "graph/validate.hpp"

namespace pe {

namespace {

proto::BlockDesc& ensure_block(proto::ProgramDesc& program) {
  if (program.blocks_size() == 0) {
    proto::BlockDesc* b = program.add_blocks();
    b->set_idx(0);
    b->set_parent_idx(-1);
  }
  return *program.mutable_blocks(0);
}

const var_info& info_of(const var_table& vars, const std::string& name) {
  auto it = vars.find(name);
  if (it == vars.end()) throw error("variable '" + name + "' is not declared");
  return it->second;
}

proto::OpDesc& add_op(proto::BlockDesc& block, const std::string& type, const slot_args& inputs,
                      const slot_args& outputs,
                      const std::vector<std::pair<std::string, attribute>>& attrs,
                      std::int32_t role) {
  proto::OpDesc& op = *block.add_ops();
  op.set_type(type);
  for (const auto& [slot, args] : inputs) set_input(op, slot, args);
  for (const auto& [slot, args] : outputs) set_output(op, slot, args);
  for (const auto& [name, value] : attrs) set_attr(op, name, value);
  set_attr(op, "op_role", role);
  return op;
}

} // namespace

program_builder::program_builder(proto::ProgramDesc& main, proto::ProgramDesc& startup,
                                 std::uint64_t seed)
    : main_(main), startup_(startup), seed_(seed) {
  ensure_block(main_);
  ensure_block(startup_);
}

std::string program_builder::unique_name(const std::string& prefix) {
  int& k = counters_[prefix];
  auto taken = [&](const std::string& candidate) {
    for (const auto& v : main_block().vars())
      if (v.name() == candidate || v.name().starts_with(candidate + ".")) return true;
    return false;
  };
  while (taken(prefix + "_" + std::to_string(k))) ++k;
  return prefix + "_" + std::to_string(k++);
}

proto::VarDesc& program_builder::declare(proto::BlockDesc& block, const std::string& name,
                                         dtype type, const shape_t& dims, bool persistable) {
  if (proto::VarDesc* existing = declared_var(block, name)) return *existing;
  proto::VarDesc& v = *block.add_vars();
  v.set_name(name);
  v.mutable_type()->set_type(proto::VarType::LOD_TENSOR);
  auto* desc = v.mutable_type()->mutable_lod_tensor()->mutable_tensor();
  desc->set_data_type(static_cast<proto::VarType::Type>(type));
  for (auto d : dims) desc->add_dims(d);
  if (persistable) v.set_persistable(true);
  return v;
}

std::string program_builder::data(const std::string& name, shape_t dims, dtype type) {
  proto::VarDesc& v = declare(main_block(), name, type, dims, false);
  v.set_need_check_feed(true);
  v.set_stop_gradient(true);
  return name;
}

std::string program_builder::parameter(const std::string& name, shape_t dims, init how) {
  for (auto* block : {&main_block(), &startup_block()}) {
    proto::VarDesc& v = declare(*block, name, dtype::fp32, dims, true);
    v.set_is_parameter(true);
    v.set_stop_gradient(false);
  }
  std::vector<std::int64_t> shape(dims.begin(), dims.end());
  if (how != init::xavier_uniform) {
    add_op(startup_block(), "fill_constant", {}, {{"Out", {name}}},
           {{"shape", shape}, {"value", how == init::one ? 1.0f : 0.0f}, {"dtype", std::int32_t{5}}},
           op_role::forward);
    return name;
  }
  // Xavier/Glorot uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out)), with Paddle's fans: a
  // conv filter [out, in, kh, kw] has fan_in = in * kh * kw and fan_out = out * kh * kw.
  double fan_in = static_cast<double>(dims.at(0));
  double fan_out = dims.size() > 1 ? static_cast<double>(numel_of(dims)) / fan_in : fan_in;
  if (dims.size() > 2) {
    double receptive = static_cast<double>(numel_of(dims)) / static_cast<double>(dims[0] * dims[1]);
    fan_in = static_cast<double>(dims[1]) * receptive;
    fan_out = static_cast<double>(dims[0]) * receptive;
  }
  auto limit = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
  add_op(startup_block(), "uniform_random", {}, {{"Out", {name}}},
         {{"shape", shape},
          {"min", -limit},
          {"max", limit},
          {"seed", static_cast<std::int32_t>(next_seed() % 0x7fffffff + 1)},
          {"dtype", std::int32_t{5}}},
         op_role::forward);
  return name;
}

std::string program_builder::constant_state(const std::string& name, shape_t dims, float value) {
  declare(main_block(), name, dtype::fp32, dims, true);
  declare(startup_block(), name, dtype::fp32, dims, true);
  add_op(startup_block(), "fill_constant", {}, {{"Out", {name}}},
         {{"shape", std::vector<std::int64_t>(dims.begin(), dims.end())},
          {"value", value},
          {"dtype", std::int32_t{5}}},
         op_role::forward);
  return name;
}

proto::OpDesc& program_builder::append_op(
    const std::string& type, const slot_args& inputs, const slot_args& outputs,
    const std::vector<std::pair<std::string, attribute>>& attrs, std::int32_t role) {
  const op_schema* schema = op_registry::global().find(type);
  if (schema == nullptr) throw error("program_builder: unknown op type '" + type + "'");
  proto::BlockDesc& block = main_block();
  proto::OpDesc& op = add_op(block, type, inputs, outputs, attrs, role);
  attribute_map resolved = resolve_attributes(op, *schema);
  var_table vars = tensor_vars(block);
  shape_context ctx(op, resolved, vars, block.ops_size() - 1);
  if (schema->infer_shape) schema->infer_shape(ctx);
  for (const auto& [name, info] : ctx.inferred()) declare(block, name, info.type, info.dims, false);
  return op;
}

std::string program_builder::fc(const std::string& input, int size, const std::string& activation) {
  if (size <= 0) throw error("fc: size must be positive, got " + std::to_string(size));
  shape_t in_dims = info_of(tensor_vars(main_block()), input).dims;
  std::int64_t in_width = 1;
  for (std::size_t d = 1; d < in_dims.size(); ++d) in_width *= in_dims[d];
  std::string prefix = unique_name("fc");
  std::string w = parameter(prefix + ".w_0", {in_width, size}, init::xavier_uniform);
  std::string b = parameter(prefix + ".b_0", {size}, init::zero);
  std::string product = prefix + ".tmp_0", biased = prefix + ".tmp_1";
  append_op("mul", {{"X", {input}}, {"Y", {w}}}, {{"Out", {product}}},
            {{"x_num_col_dims", std::int32_t{1}}, {"y_num_col_dims", std::int32_t{1}}});
  append_op("elementwise_add", {{"X", {product}}, {"Y", {b}}}, {{"Out", {biased}}},
            {{"axis", std::int32_t{1}}});
  if (activation.empty()) return biased;
  if (activation != "relu" && activation != "tanh" && activation != "sigmoid")
    throw error("fc: unknown activation '" + activation + "' (relu, tanh, sigmoid or none)");
  std::string out = prefix + ".tmp_2";
  append_op(activation, {{"X", {biased}}}, {{"Out", {out}}}, {});
  return out;
}

std::string program_builder::conv2d(const std::string& input, int filters, int kernel,
                                    int stride) {
  if (filters <= 0 || kernel <= 0 || stride <= 0)
    throw error("conv2d: filters, kernel and stride must be positive");
  const shape_t in_dims = info_of(tensor_vars(main_block()), input).dims;
  if (in_dims.size() != 4) throw error("conv2d: input '" + input + "' must be [N, C, H, W]");
  std::string prefix = unique_name("conv2d");
  std::string w = parameter(prefix + ".w_0", {filters, in_dims[1], kernel, kernel},
                            init::xavier_uniform);
  std::string out = prefix + ".tmp_0";
  const std::int32_t pad = kernel / 2;
  append_op("conv2d", {{"Input", {input}}, {"Filter", {w}}}, {{"Output", {out}}},
            {{"strides", std::vector<std::int32_t>{stride, stride}},
             {"paddings", std::vector<std::int32_t>{pad, pad}},
             {"dilations", std::vector<std::int32_t>{1, 1}},
             {"groups", std::int32_t{1}}});
  return out;
}

std::string program_builder::batch_norm(const std::string& input, const std::string& activation) {
  const shape_t in_dims = info_of(tensor_vars(main_block()), input).dims;
  if (in_dims.size() != 2 && in_dims.size() != 4)
    throw error("batch_norm: input '" + input + "' must have rank 2 or 4");
  std::string prefix = unique_name("batch_norm");
  const std::int64_t channels = in_dims[1];
  std::string scale = parameter(prefix + ".w_0", {channels}, init::one);
  std::string bias = parameter(prefix + ".b_0", {channels}, init::zero);
  std::string mean = constant_state(prefix + ".w_1", {channels}, 0.0f);
  std::string variance = constant_state(prefix + ".w_2", {channels}, 1.0f);
  std::string out = prefix + ".tmp_3";
  append_op("batch_norm",
            {{"X", {input}}, {"Scale", {scale}}, {"Bias", {bias}}, {"Mean", {mean}},
             {"Variance", {variance}}},
            {{"Y", {out}}, {"MeanOut", {mean}}, {"VarianceOut", {variance}},
             {"SavedMean", {prefix + ".tmp_0"}}, {"SavedVariance", {prefix + ".tmp_1"}}},
            {{"momentum", 0.9f}, {"epsilon", 1e-5f}, {"is_test", false}});
  if (activation.empty()) return out;
  if (activation != "relu" && activation != "tanh" && activation != "sigmoid")
    throw error("batch_norm: unknown activation '" + activation + "' (relu, tanh, sigmoid or none)");
  std::string activated = prefix + ".tmp_4";
  append_op(activation, {{"X", {out}}}, {{"Out", {activated}}}, {});
  return activated;
}

std::string program_builder::pool2d(const std::string& input, const std::string& type, int kernel,
                                    int stride) {
  if (type != "max" && type != "avg") throw error("pool2d: type must be max or avg, got " + type);
  std::string out = unique_name("pool2d") + ".tmp_0";
  append_op("pool2d", {{"X", {input}}}, {{"Out", {out}}},
            {{"pooling_type", type},
             {"ksize", std::vector<std::int32_t>{kernel, kernel}},
             {"strides", std::vector<std::int32_t>{stride, stride}},
             {"paddings", std::vector<std::int32_t>{0, 0}}});
  return out;
}

std::pair<std::string, std::string> program_builder::softmax_with_cross_entropy(
    const std::string& logits, const std::string& label) {
  std::string prefix = unique_name("softmax_with_cross_entropy");
  std::string softmax = prefix + ".tmp_0", loss = prefix + ".tmp_1";
  append_op("softmax_with_cross_entropy", {{"Logits", {logits}}, {"Label", {label}}},
            {{"Softmax", {softmax}}, {"Loss", {loss}}},
            {{"soft_label", false}, {"ignore_index", std::int32_t{-100}}, {"axis", std::int32_t{-1}}});
  return {softmax, loss};
}

std::string program_builder::mean(const std::string& x) {
  std::string out = unique_name("mean") + ".tmp_0";
  append_op("mean", {{"X", {x}}}, {{"Out", {out}}}, {});
  return out;
}

std::string program_builder::accuracy(const std::string& prediction, const std::string& label,
                                      int k) {
  std::string top = unique_name("top_k");
  append_op("top_k", {{"X", {prediction}}}, {{"Out", {top + ".tmp_0"}}, {"Indices", {top + ".tmp_1"}}},
            {{"k", std::int32_t{k}}});
  std::string acc = unique_name("accuracy");
  append_op("accuracy",
            {{"Out", {top + ".tmp_0"}}, {"Indices", {top + ".tmp_1"}}, {"Label", {label}}},
            {{"Accuracy", {acc + ".tmp_0"}}, {"Correct", {acc + ".tmp_1"}}, {"Total", {acc + ".tmp_2"}}},
            {});
  return acc + ".tmp_0";
}

} // namespace pe

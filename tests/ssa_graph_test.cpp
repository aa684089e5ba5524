// The SSA graph builder: versions, hazard edges, collectives per reduce mode, fused
// all-reduce buckets, reduce-mode owners, fetch ops, topological order and DOT output.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "graph/builder.hpp"
#include "graph/models/mlp.hpp"
#include "graph/op_role.hpp"
#include "graph/ssa_graph.hpp"

namespace {

using namespace pe;
using kind = op_handle::kind;
using names = std::vector<std::string>;

/// MLP 6 -> 5 -> 3. Gradients in production order (bytes): fc_1.b_0 (12), fc_1.w_0 (60),
/// fc_0.b_0 (20), fc_0.w_0 (120).
model_programs tiny(const std::string& optimizer = "sgd") {
  mlp_config c;
  c.input_width = 6;
  c.hidden = {5};
  c.classes = 3;
  c.optimizer = optimizer;
  return build_mlp(c);
}

bool is_collective(const op_handle& op) {
  return op.what == kind::all_reduce || op.what == kind::reduce || op.what == kind::broadcast;
}

/// Ids equal indices, edges agree in both directions (one entry per edge), and every op
/// comes after the producers of all its inputs.
void expect_well_formed(const ssa_graph& g) {
  for (std::size_t i = 0; i < g.vars.size(); ++i) ASSERT_EQ(g.vars[i].id, static_cast<int>(i));
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const op_handle& op = g.ops[i];
    ASSERT_EQ(op.id, static_cast<int>(i));
    for (int in : op.inputs) {
      const var_handle& v = g.vars.at(in);
      EXPECT_LT(v.generated_op, op.id) << "op " << op.id << " reads var " << in;
      EXPECT_EQ(std::count(op.inputs.begin(), op.inputs.end(), in),
                std::count(v.pending_ops.begin(), v.pending_ops.end(), op.id));
    }
    for (int out : op.outputs) EXPECT_EQ(g.vars.at(out).generated_op, op.id);
    EXPECT_FALSE(op.outputs.empty()) << "op " << op.id;
  }
  for (const auto& v : g.vars)
    for (int reader : v.pending_ops) {
      const auto& inputs = g.ops.at(reader).inputs;
      EXPECT_NE(std::find(inputs.begin(), inputs.end(), v.id), inputs.end());
    }
}

/// build_ssa_graph, checked by expect_well_formed.
ssa_graph build(const proto::ProgramDesc& main, int places, const build_strategy& s = {},
                const names& fetch = {}) {
  ssa_graph g = build_ssa_graph(main, places, s, fetch);
  expect_well_formed(g);
  return g;
}

/// Index in block 0 of the `nth` op of `type`.
int op_index(const proto::ProgramDesc& p, const std::string& type, int nth = 0) {
  for (int i = 0; i < p.blocks(0).ops_size(); ++i)
    if (p.blocks(0).ops(i).type() == type && nth-- == 0) return i;
  throw std::runtime_error("no op " + type);
}

/// The computation op handle of block op `index` on `place`.
const op_handle& handle_of(const ssa_graph& g, int index, int place) {
  for (const auto& op : g.ops)
    if (op.what != kind::fetch && op.op_index == index && op.place == place) return op;
  throw std::runtime_error("no handle for op " + std::to_string(index));
}

/// The var handles of (place, name), oldest first.
std::vector<const var_handle*> versions(const ssa_graph& g, int place, const std::string& name) {
  std::vector<const var_handle*> out;
  for (const auto& v : g.vars)
    if (!v.dummy && v.place == place && v.name == name) out.push_back(&v);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->version < b->version; });
  return out;
}

std::vector<const op_handle*> ops_of(const ssa_graph& g, kind what) {
  std::vector<const op_handle*> out;
  for (const auto& op : g.ops)
    if (op.what == what) out.push_back(&op);
  return out;
}

std::vector<names> vars_of(const std::vector<const op_handle*>& ops) {
  std::vector<names> out;
  for (const auto* op : ops) out.push_back(op->vars);
  return out;
}

/// The non-dummy vars among `ids`.
std::vector<const var_handle*> real_vars(const ssa_graph& g, const std::vector<int>& ids) {
  std::vector<const var_handle*> out;
  for (int id : ids)
    if (!g.vars[id].dummy) out.push_back(&g.vars[id]);
  return out;
}

/// Whether a dummy var leads from op `from` to op `to`.
bool has_dummy_edge(const ssa_graph& g, int from, int to) {
  for (int out : g.ops[from].outputs) {
    const var_handle& v = g.vars[out];
    if (v.dummy && std::find(v.pending_ops.begin(), v.pending_ops.end(), to) != v.pending_ops.end())
      return true;
  }
  return false;
}

const names tiny_grads = {"fc_1.b_0@GRAD", "fc_1.w_0@GRAD", "fc_0.b_0@GRAD", "fc_0.w_0@GRAD"};

TEST(ssa_graph, versions_of_a_parameter_read_forward_and_written_by_sgd) {
  auto m = tiny();
  ssa_graph g = build(m.main, 1);
  int mul = op_index(m.main, "mul"), mul_grad = op_index(m.main, "mul_grad", 1);
  int sgd = op_index(m.main, "sgd"); // optimizers follow the parameters' declaration order
  auto w = versions(g, 0, "fc_0.w_0");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0]->version, 0);
  EXPECT_EQ(w[0]->generated_op, -1);
  names readers;
  for (int r : w[0]->pending_ops) readers.push_back(m.main.blocks(0).ops(g.ops[r].op_index).type());
  EXPECT_EQ(readers, (names{"mul", "mul_grad", "sgd"}));
  EXPECT_EQ(w[0]->pending_ops[0], handle_of(g, mul, 0).id);
  EXPECT_EQ(w[0]->pending_ops[1], handle_of(g, mul_grad, 0).id);
  EXPECT_EQ(w[1]->version, 1);
  EXPECT_EQ(w[1]->generated_op, handle_of(g, sgd, 0).id);
  EXPECT_TRUE(w[1]->pending_ops.empty());
  // The gradient's first version is written by mul_grad, not before the step.
  auto grad = versions(g, 0, "fc_0.w_0@GRAD");
  ASSERT_EQ(grad.size(), 1u);
  EXPECT_EQ(grad[0]->generated_op, handle_of(g, mul_grad, 0).id);
}

TEST(ssa_graph, war_dummies_order_readers_before_the_next_writer) {
  auto m = tiny();
  int mul = op_index(m.main, "mul"), mul_grad = op_index(m.main, "mul_grad", 1);
  int sgd = op_index(m.main, "sgd");
  ssa_graph g = build(m.main, 2);
  for (int p = 0; p < 2; ++p) {
    int writer = handle_of(g, sgd, p).id;
    EXPECT_TRUE(has_dummy_edge(g, handle_of(g, mul, p).id, writer)) << p;
    EXPECT_TRUE(has_dummy_edge(g, handle_of(g, mul_grad, p).id, writer)) << p;
    // The dummy carries the place of the variable it guards.
    for (int out : handle_of(g, mul, p).outputs)
      if (g.vars[out].dummy) {
        EXPECT_EQ(g.vars[out].place, p);
      }
  }
  // No edge across places, and none twice.
  EXPECT_FALSE(has_dummy_edge(g, handle_of(g, mul, 0).id, handle_of(g, sgd, 1).id));
  int from_mul = 0;
  for (int out : handle_of(g, mul, 0).outputs) from_mul += g.vars[out].dummy ? 1 : 0;
  EXPECT_EQ(from_mul, 1);

  build_strategy skip;
  skip.skip_hazard_edges = true;
  ssa_graph bare = build(m.main, 2, skip);
  EXPECT_TRUE(std::none_of(bare.vars.begin(), bare.vars.end(), [](auto& v) { return v.dummy; }));
}

/// x = fill(1); x = fill(2); y = scale(x); z = y + y.
proto::ProgramDesc overwrite_program() {
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  for (float value : {1.f, 2.f})
    b.append_op("fill_constant", {}, {{"Out", {"x"}}},
                {{"shape", std::vector<std::int64_t>{2}}, {"value", value}});
  b.append_op("scale", {{"X", {"x"}}}, {{"Out", {"y"}}}, {});
  b.append_op("elementwise_add", {{"X", {"y"}}, {"Y", {"y"}}}, {{"Out", {"z"}}}, {});
  return main;
}

TEST(ssa_graph, waw_dummy_orders_consecutive_writes) {
  auto main = overwrite_program();
  ssa_graph g = build(main, 1);
  auto x = versions(g, 0, "x");
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0]->generated_op, 0);
  EXPECT_EQ(x[1]->generated_op, 1);
  EXPECT_TRUE(x[0]->pending_ops.empty());
  EXPECT_TRUE(has_dummy_edge(g, 0, 1));
  EXPECT_EQ(g.ops[1].inputs.size(), 1u); // only the dummy
  // Reading one var in two slots gives two edges.
  auto y = versions(g, 0, "y");
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0]->pending_ops, (std::vector<int>{3, 3}));
  EXPECT_EQ(g.ops[3].inputs, (std::vector<int>{y[0]->id, y[0]->id}));

  build_strategy skip;
  skip.skip_hazard_edges = true;
  EXPECT_FALSE(has_dummy_edge(build(main, 1, skip), 0, 1));
}

TEST(ssa_graph, one_place_has_no_collectives) {
  auto m = tiny();
  for (auto mode : {build_strategy::reduce_mode::all_reduce, build_strategy::reduce_mode::reduce}) {
    build_strategy s;
    s.reduce = mode;
    s.fuse_all_reduce_bytes = 64;
    ssa_graph g = build(m.main, 1, s);
    EXPECT_TRUE(std::none_of(g.ops.begin(), g.ops.end(), is_collective));
    EXPECT_TRUE(g.owners.empty());
    EXPECT_EQ(g.ops.size(), static_cast<std::size_t>(m.main.blocks(0).ops_size()));
  }
}

TEST(ssa_graph, one_all_reduce_per_gradient) {
  auto m = tiny();
  build_strategy per_gradient;
  per_gradient.all_reduce_groups = build_strategy::all_reduce_grouping::per_gradient;
  for (int places : {2, 3}) {
    ssa_graph g = build(m.main, places, per_gradient);
    auto reduces = ops_of(g, kind::all_reduce);
    EXPECT_EQ(vars_of(reduces), (std::vector<names>{{tiny_grads[0]}, {tiny_grads[1]},
                                                    {tiny_grads[2]}, {tiny_grads[3]}}));
    for (const auto* op : reduces) {
      EXPECT_EQ(op->place, -1);
      ASSERT_EQ(op->inputs.size(), static_cast<std::size_t>(places));
      ASSERT_EQ(op->outputs.size(), static_cast<std::size_t>(places));
      for (int p = 0; p < places; ++p) {
        const var_handle& in = g.vars[op->inputs[p]];
        const var_handle& out = g.vars[op->outputs[p]];
        EXPECT_EQ(in.place, p);
        EXPECT_EQ(in.name, op->vars[0]);
        EXPECT_EQ(in.version, 0);
        EXPECT_NE(in.generated_op, -1);
        // Reading the gradient orders the all-reduce after its producer: no dummy needed.
        EXPECT_FALSE(has_dummy_edge(g, in.generated_op, op->id));
        EXPECT_EQ(out.place, p);
        EXPECT_EQ(out.version, 1);
        // The optimizer on place p reads the summed gradient.
        ASSERT_EQ(out.pending_ops.size(), 1u);
        EXPECT_EQ(g.ops[out.pending_ops[0]].place, p);
        EXPECT_EQ(g.ops[out.pending_ops[0]].what, kind::computation);
      }
    }
    // Each all-reduce follows the producer of its gradient directly.
    for (const auto* op : reduces) EXPECT_EQ(g.vars[op->inputs.back()].generated_op, op->id - 1);
  }
}

TEST(ssa_graph, one_all_reduce_per_layer_by_default) {
  // Paddle 2's default: the gradients of fc_1.b_0 and fc_1.w_0 (one layer: the names agree
  // before the first '.') in one collective, launched once the layer's last one is written.
  auto m = tiny();
  for (int places : {2, 3}) {
    ssa_graph g = build(m.main, places);
    auto reduces = ops_of(g, kind::all_reduce);
    ASSERT_EQ(vars_of(reduces), (std::vector<names>{{tiny_grads[0], tiny_grads[1]},
                                                    {tiny_grads[2], tiny_grads[3]}}));
    for (const auto* op : reduces) {
      ASSERT_EQ(op->inputs.size(), 2u * static_cast<std::size_t>(places));
      ASSERT_EQ(op->outputs.size(), 2u * static_cast<std::size_t>(places));
      int last_producer = -1;
      for (std::size_t i = 0; i < op->inputs.size(); ++i) {
        const var_handle& in = g.vars[op->inputs[i]];
        const var_handle& out = g.vars[op->outputs[i]];
        EXPECT_EQ(in.version, 0);
        EXPECT_EQ(out.version, 1);
        EXPECT_EQ(out.name, in.name);
        last_producer = std::max(last_producer, in.generated_op);
        // Each place's optimizer reads its summed gradient, not the place's own.
        ASSERT_EQ(out.pending_ops.size(), 1u);
        EXPECT_EQ(g.ops[out.pending_ops[0]].place, out.place);
      }
      EXPECT_LT(last_producer, op->id); // after the layer's last gradient
    }
  }
  // A size bucket overrides the grouping.
  build_strategy buckets;
  buckets.fuse_all_reduce_bytes = 1 << 20;
  EXPECT_EQ(vars_of(ops_of(build(m.main, 2, buckets), kind::all_reduce)),
            (std::vector<names>{{tiny_grads[0], tiny_grads[1], tiny_grads[2], tiny_grads[3]}}));
}

/// The fused all-reduce buckets for a bucket size, in issue order.
std::vector<names> buckets(const proto::ProgramDesc& main, std::int64_t bytes) {
  build_strategy s;
  s.fuse_all_reduce_bytes = bytes;
  ssa_graph g = build(main, 2, s);
  for (const auto* op : ops_of(g, kind::all_reduce)) {
    EXPECT_EQ(op->inputs.size(), 2 * op->vars.size());
    for (std::size_t k = 0; k < op->inputs.size(); ++k) {
      EXPECT_EQ(g.vars[op->inputs[k]].name, op->vars[k / 2]); // grad-major, then place
      EXPECT_EQ(g.vars[op->inputs[k]].place, static_cast<int>(k % 2));
      EXPECT_EQ(g.vars[op->outputs[k]].name, op->vars[k / 2]);
    }
  }
  return vars_of(ops_of(g, kind::all_reduce));
}

TEST(ssa_graph, fused_all_reduce_buckets) {
  auto m = tiny();
  const std::string &b1 = tiny_grads[0], &w1 = tiny_grads[1], &b0 = tiny_grads[2],
                    &w0 = tiny_grads[3];
  // 12 + 60 = 72 >= 64; 20 + 120 >= 64.
  EXPECT_EQ(buckets(m.main, 64), (std::vector<names>{{b1, w1}, {b0, w0}}));
  // 12 + 60 + 20 = 92 >= 80; 120 >= 80.
  EXPECT_EQ(buckets(m.main, 80), (std::vector<names>{{b1, w1, b0}, {w0}}));
  // One byte: every gradient fills a bucket.
  EXPECT_EQ(buckets(m.main, 1), (std::vector<names>{{b1}, {w1}, {b0}, {w0}}));
  // Never full: flushed before the first optimizer op.
  EXPECT_EQ(buckets(m.main, 1 << 20), (std::vector<names>{{b1, w1, b0, w0}}));

  build_strategy s;
  s.fuse_all_reduce_bytes = 1 << 20;
  ssa_graph g = build(m.main, 2, s);
  int first_sgd = handle_of(g, op_index(m.main, "sgd"), 0).id;
  EXPECT_EQ(ops_of(g, kind::all_reduce).front()->id, first_sgd - 1);
}

TEST(ssa_graph, a_backward_op_reading_a_grouped_gradient_reads_its_sum) {
  // A backward op that reads fc_1.w_0@GRAD right after its producer, before the next layer's
  // first gradient: the layer's all-reduce must come first, or the op would read the
  // place's own partial gradient. The same holds for size buckets.
  auto m = tiny();
  const std::string grad = "fc_1.w_0@GRAD", probe = "fc_1.w_0@GRAD.probe";
  auto& block = *m.main.mutable_blocks(0);
  proto::VarDesc probe_var;
  for (const auto& v : block.vars())
    if (v.name() == grad) probe_var = v; // copied first: adding to vars() moves its elements
  ASSERT_EQ(probe_var.name(), grad);
  probe_var.set_name(probe);
  *block.add_vars() = probe_var;
  proto::OpDesc& op = *block.add_ops();
  op.set_type("scale");
  auto* in = op.add_inputs();
  in->set_parameter("X");
  in->add_arguments(grad);
  auto* out = op.add_outputs();
  out->set_parameter("Out");
  out->add_arguments(probe);
  auto* role = op.add_attrs();
  role->set_name("op_role");
  role->set_type(proto::INT);
  role->set_i(op_role::backward);
  const int producer = op_index(m.main, "mul_grad"); // the last layer's, first in backward order
  for (int i = block.ops_size() - 1; i > producer + 1; --i) block.mutable_ops()->SwapElements(i, i - 1);
  ASSERT_EQ(block.ops(producer + 1).type(), "scale");
  build_strategy buckets;
  buckets.fuse_all_reduce_bytes = 1 << 20;
  for (const build_strategy& s : {build_strategy{}, buckets}) {
    ssa_graph g = build(m.main, 2, s);
    for (int p = 0; p < 2; ++p) {
      const op_handle& reader = handle_of(g, producer + 1, p);
      const auto read = real_vars(g, reader.inputs);
      ASSERT_EQ(read.size(), 1u);
      EXPECT_EQ(read[0]->name, grad);
      EXPECT_EQ(read[0]->version, 1); // the summed one
      ASSERT_GE(read[0]->generated_op, 0);
      EXPECT_EQ(g.ops[read[0]->generated_op].what, kind::all_reduce);
    }
  }
}

TEST(ssa_graph, fused_bucket_left_at_the_end_is_flushed) {
  // A program whose last op produces a gradient: no optimizer op triggers the flush.
  auto m = tiny();
  auto& ops = *m.main.mutable_blocks(0)->mutable_ops();
  while (role_of(ops.Get(ops.size() - 1)) & op_role::optimize) ops.RemoveLast();
  build_strategy s;
  s.fuse_all_reduce_bytes = 1 << 20;
  ssa_graph g = build_ssa_graph(m.main, 2, s, {m.loss});
  expect_well_formed(g);
  auto reduces = ops_of(g, kind::all_reduce);
  ASSERT_EQ(reduces.size(), 1u);
  EXPECT_EQ(reduces[0]->vars, tiny_grads);
  EXPECT_EQ(g.ops[reduces[0]->id + 1].what, kind::fetch); // after all program ops
}

TEST(ssa_graph, reduce_mode_balances_owners_by_element_count) {
  mlp_config c; // 784 -> 256 -> 128 -> 10
  auto m = build_mlp(c);
  build_strategy s;
  s.reduce = build_strategy::reduce_mode::reduce;
  ssa_graph g = build(m.main, 2, s);
  // Gradients come last layer first, bias before weight. Loads (place 0|1) after each
  // assignment: 10|0, 10|1280, 138|1280, 32906|1280, 32906|1536, 32906|202240.
  std::vector<std::pair<std::string, int>> expected = {
      {"fc_2.b_0", 0}, {"fc_2.w_0", 1}, {"fc_1.b_0", 0},
      {"fc_1.w_0", 0}, {"fc_0.b_0", 1}, {"fc_0.w_0", 1}};
  EXPECT_EQ(g.owners, expected);

  std::map<std::string, int> owner(expected.begin(), expected.end());
  int optimizers = 0;
  for (const auto& op : g.ops) {
    if (op.what != kind::computation) continue;
    const auto& desc = m.main.blocks(0).ops(op.op_index);
    if (desc.type() != "sgd") continue;
    ++optimizers;
    EXPECT_EQ(op.place, owner.at(desc.inputs(0).arguments(0))) << desc.DebugString();
  }
  EXPECT_EQ(optimizers, 6);

  auto reduces = ops_of(g, kind::reduce);
  ASSERT_EQ(reduces.size(), 6u);
  for (const auto* op : reduces) {
    std::string param = op->vars[0].substr(0, op->vars[0].size() - 5);
    EXPECT_EQ(op->place, owner.at(param));
    EXPECT_EQ(op->inputs.size(), 2u);
    ASSERT_EQ(op->outputs.size(), 1u);
    EXPECT_EQ(g.vars[op->outputs[0]].place, op->place);
  }
  auto casts = ops_of(g, kind::broadcast);
  ASSERT_EQ(casts.size(), 6u);
  for (std::size_t k = 0; k < casts.size(); ++k) {
    const op_handle& op = *casts[k];
    EXPECT_EQ(op.vars, names{expected[k].first});
    EXPECT_EQ(op.place, expected[k].second);
    auto in = real_vars(g, op.inputs);
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(in[0]->place, op.place);
    EXPECT_EQ(in[0]->version, 1); // written by the owner's sgd
    // Readers of the other place's copy (mul, mul_grad) finish before it is overwritten.
    EXPECT_EQ(op.inputs.size(), 3u);
    ASSERT_EQ(op.outputs.size(), 1u);
    EXPECT_EQ(g.vars[op.outputs[0]].place, 1 - op.place);
    EXPECT_EQ(g.vars[op.outputs[0]].version, 1);
  }
  // After every program op.
  for (const auto& op : g.ops)
    if (op.what == kind::computation) {
      EXPECT_LT(op.id, casts.front()->id);
    }
}

TEST(ssa_graph, reduce_mode_places_every_optimizer_output_on_the_owner) {
  auto m = tiny("adam");
  build_strategy s;
  s.reduce = build_strategy::reduce_mode::reduce;
  ssa_graph g = build(m.main, 3, s);
  ASSERT_EQ(g.owners.size(), 4u);
  for (const auto& [param, place] : g.owners)
    for (const std::string& state : {param + "_moment1_0", param + "_beta1_pow_acc_0"})
      for (int p = 0; p < 3; ++p) // only the owner's adam writes the optimizer state
        EXPECT_EQ(versions(g, p, state).size(), p == place ? 2u : 0u) << state << " on " << p;
}

/// The vars of the collectives each place takes part in, in issue order.
std::vector<names> collective_sequence(const ssa_graph& g, int place) {
  std::vector<names> seq;
  for (const auto& op : g.ops) {
    if (!is_collective(op)) continue;
    bool touches = false;
    for (int v : op.inputs) touches |= g.vars[v].place == place;
    for (int v : op.outputs) touches |= g.vars[v].place == place;
    if (touches) seq.push_back(op.vars);
  }
  return seq;
}

TEST(ssa_graph, collective_order_is_the_same_on_every_place) {
  auto m = tiny("momentum");
  build_strategy s;
  s.fuse_all_reduce_bytes = 64;
  ssa_graph fused = build(m.main, 3, s);
  s.fuse_all_reduce_bytes = 0;
  s.reduce = build_strategy::reduce_mode::reduce;
  ssa_graph reduced = build(m.main, 3, s);
  std::vector<names> fused_order = {{tiny_grads[0], tiny_grads[1]}, {tiny_grads[2], tiny_grads[3]}};
  std::vector<names> reduce_order = {{tiny_grads[0]}, {tiny_grads[1]}, {tiny_grads[2]},
                                     {tiny_grads[3]}};
  // Broadcasts follow, in owner order; an owner touches all places too.
  for (const auto& [param, _] : reduced.owners) reduce_order.push_back({param});
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(collective_sequence(fused, p), fused_order) << p;
    EXPECT_EQ(collective_sequence(reduced, p), reduce_order) << p;
  }
}

TEST(ssa_graph, scale_loss_grad_replaces_the_loss_gradient_seed) {
  auto m = tiny();
  int seed = -1;
  for (int i = 0; i < m.main.blocks(0).ops_size(); ++i)
    if (role_of(m.main.blocks(0).ops(i)) == (op_role::backward | op_role::loss)) seed = i;
  ASSERT_GE(seed, 0);
  for (auto scale : {build_strategy::gradient_scale::coeff_num_device,
                     build_strategy::gradient_scale::customized}) {
    build_strategy s;
    s.scale = scale;
    ssa_graph g = build(m.main, 2, s);
    auto scales = ops_of(g, kind::scale_loss_grad);
    ASSERT_EQ(scales.size(), 2u);
    for (int p = 0; p < 2; ++p) {
      EXPECT_EQ(scales[p]->place, p);
      EXPECT_EQ(scales[p]->op_index, seed);
      ASSERT_EQ(scales[p]->outputs.size(), 1u);
      const var_handle& out = g.vars[scales[p]->outputs[0]];
      EXPECT_EQ(out.name, m.loss + "@GRAD");
      EXPECT_EQ(out.place, p);
      EXPECT_EQ(&handle_of(g, seed, p), scales[p]);
    }
  }
}

TEST(ssa_graph, inference_program_has_no_collectives) {
  auto m = tiny();
  for (auto mode : {build_strategy::reduce_mode::all_reduce, build_strategy::reduce_mode::reduce}) {
    build_strategy s;
    s.reduce = mode;
    ssa_graph g = build(m.test, 3, s, {m.accuracy});
    EXPECT_TRUE(std::none_of(g.ops.begin(), g.ops.end(), is_collective));
    EXPECT_TRUE(g.owners.empty());
    EXPECT_EQ(g.ops.size(), 3u * m.test.blocks(0).ops_size() + 3u);
  }
}

TEST(ssa_graph, fetch_ops_come_last_and_read_the_newest_version) {
  auto m = tiny();
  ssa_graph g = build(m.main, 2, {}, {m.loss, "fc_0.w_0"});
  ASSERT_GE(g.ops.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const op_handle& op = g.ops[g.ops.size() - 4 + k];
    EXPECT_EQ(op.what, kind::fetch);
    EXPECT_EQ(op.fetch_index, k / 2);
    EXPECT_EQ(op.place, k % 2);
    ASSERT_EQ(op.inputs.size(), 1u);
    const var_handle& in = g.vars[op.inputs[0]];
    EXPECT_EQ(in.name, k < 2 ? m.loss : "fc_0.w_0");
    EXPECT_EQ(in.place, op.place);
    EXPECT_EQ(in.version, versions(g, op.place, in.name).back()->version);
    EXPECT_EQ(in.version, k < 2 ? 0 : 1); // the parameter after sgd
    ASSERT_EQ(op.outputs.size(), 1u);
    EXPECT_TRUE(g.vars[op.outputs[0]].dummy);
    EXPECT_TRUE(g.vars[op.outputs[0]].pending_ops.empty());
  }
  try {
    build_ssa_graph(m.main, 2, {}, {"nope"});
    ADD_FAILURE() << "no error";
  } catch (const error& e) {
    EXPECT_STREQ(e.what(), "fetch 'nope' is not a variable of the program");
  }
}

TEST(ssa_graph, unknown_gradient_in_op_role_var_is_an_error) {
  auto m = tiny();
  proto::OpDesc& op = *m.main.mutable_blocks(0)->mutable_ops(op_index(m.main, "mul_grad"));
  for (auto& attr : *op.mutable_attrs())
    if (attr.name() == "op_role_var") attr.set_strings(1, "ghost@GRAD");
  try {
    build_ssa_graph(m.main, 2, {}, {});
    ADD_FAILURE() << "no error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("'ghost@GRAD', which is not a variable"), std::string::npos)
        << e.what();
  }
}

TEST(ssa_graph, dot_output) {
  auto m = tiny();
  ssa_graph g = build(m.main, 2, {}, {m.loss});
  std::string dot = to_dot(g, m.main);
  EXPECT_EQ(dot.rfind("digraph", 0), 0u);
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_EQ(dot[dot.size() - 2], '}');
  for (const std::string& label : names{"\"mul\\n0\"", "\"mul\\n1\"", "\"all_reduce fc_0.b_0@GRAD fc_0.w_0@GRAD\"",
                                   "\"fc_0.w_0@1:1\"", "\"scale_loss_grad\\n0\"",
                                   "\"fetch " + m.loss + "\\n1\""})
    EXPECT_NE(dot.find(label), std::string::npos) << label;
  EXPECT_NE(dot.find("style=dashed"), std::string::npos);
  std::size_t edges = 0;
  for (auto at = dot.find("->"); at != std::string::npos; at = dot.find("->", at + 1)) ++edges;
  std::size_t expected = 0;
  for (const auto& op : g.ops) expected += op.inputs.size() + op.outputs.size();
  EXPECT_EQ(edges, expected);
}

} // namespace

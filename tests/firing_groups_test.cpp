// Firing groups (actors/step_graph.hpp): which op handles a group's firing enqueues, and that
// grouping changes nothing a step computes or promises. Every Paddle training fixture on 1 and
// 2 places trains bit for bit as it does with an actor message per op; a traced grouped step
// keeps every op's span and passes the hazard checker. Edges that other paths imply are
// dropped before grouping; a head that waits for one message is fired inline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "actors/hazard_check.hpp"
#include "actors/parallel_executor.hpp"
#include "actors/trace.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/program_io.hpp"
#include "graph/program_info.hpp"
#include "tests/support/paddle_fixtures.hpp"
#include "core/place_list.hpp"

namespace {

using namespace pe;
using pe::testing::paddle_fixture_feeds;
using pe::testing::paddle_training_fixture;

/// A Paddle training fixture on `places` CPU places, with its parameters and batch.
struct fixture_run {
  proto::ProgramDesc startup, main;
  feed_map feeds;
  std::string loss;
  parallel_executor exe;

  fixture_run(const std::string& name, int places, bool actor_per_op)
      : startup(load_program(paddle_training_fixture(name) + "/startup.pb")),
        main(load_program(paddle_training_fixture(name) + "/main.pb")),
        feeds(paddle_fixture_feeds(paddle_training_fixture(name), main)),
        loss(analyze_program(main).loss),
        exe(make_cpu_places(places), startup, main, build_strategy{}, strategy(actor_per_op)) {
    for (const auto& [var, value] : load_params(paddle_training_fixture(name) + "/params", main))
      exe.set_persistable(var, value);
  }

  static execution_strategy strategy(bool actor_per_op) {
    execution_strategy s;
    s.actor_per_op = actor_per_op;
    return s;
  }

  /// The loss each place fetched, step after step.
  std::vector<tensor> train(int steps) {
    std::vector<tensor> out;
    for (int s = 0; s < steps; ++s) {
      std::vector<std::vector<tensor>> fetched = exe.run_per_place(feeds, {loss});
      for (tensor& t : fetched.at(0)) out.push_back(std::move(t));
    }
    return out;
  }

  /// Every persistable variable of every place, after the steps.
  std::map<std::pair<std::string, int>, tensor> persistables() const {
    std::map<std::pair<std::string, int>, tensor> out;
    for (const auto& v : main.blocks(0).vars())
      if (v.persistable())
        for (int p = 0; p < exe.num_places(); ++p)
          if (exe.place_scope(p).find(v.name()) != nullptr && exe.place_scope(p).find(v.name())->initialized())
            out.emplace(std::make_pair(v.name(), p), exe.host_value(v.name(), p).clone());
    return out;
  }
};

::testing::AssertionResult same_bytes(const tensor& got, const tensor& want) {
  if (got.type() != want.type() || got.shape() != want.shape() || got.bytes() != want.bytes() ||
      std::memcmp(got.raw(), want.raw(), got.bytes()) != 0)
    return ::testing::AssertionFailure() << "differs";
  return ::testing::AssertionSuccess();
}

/// Whether op `from`'s work is done before op `to`'s starts along the graph's edges, place by
/// place: an op reads what another writes (the SSA graph's var versions), each collective's
/// part on a place comes after the previous collective's part there (launch order), and a
/// group's member after the one before it (`groups`: one stream, enqueued in that order). A
/// collective's part on place p reads and writes p's versions only.
bool ordered_by_edges(const ssa_graph& g, const std::vector<std::vector<int>>& groups, int from, int to) {
  std::map<int, int> next_in_group;
  for (const auto& group : groups)
    for (std::size_t i = 0; i + 1 < group.size(); ++i) next_in_group[group[i]] = group[i + 1];
  std::vector<int> collectives;
  for (const op_handle& op : g.ops)
    if (is_collective(op.what)) collectives.push_back(op.id);
  std::set<std::pair<int, int>> seen; // (op, place)
  std::vector<std::pair<int, int>> todo = {{from, g.ops[static_cast<std::size_t>(from)].place}};
  if (is_collective(g.ops[static_cast<std::size_t>(from)].what)) {
    todo.clear();
    for (int p = 0; p < g.num_places; ++p) todo.push_back({from, p});
  }
  while (!todo.empty()) {
    const auto [op, place] = todo.back();
    todo.pop_back();
    if (!seen.insert({op, place}).second) continue;
    const op_handle& h = g.ops[static_cast<std::size_t>(op)];
    for (int v : h.outputs) {
      const var_handle& var = g.vars[static_cast<std::size_t>(v)];
      if (is_collective(h.what) && var.place != place) continue;
      for (int reader : var.pending_ops) {
        if (reader == to) return true;
        todo.push_back({reader, is_collective(g.ops[static_cast<std::size_t>(reader)].what) ? var.place : g.ops[static_cast<std::size_t>(reader)].place});
      }
    }
    if (auto next = next_in_group.find(op); next != next_in_group.end()) {
      if (next->second == to) return true;
      todo.push_back({next->second, place});
    }
    if (is_collective(h.what)) {
      auto it = std::find(collectives.begin(), collectives.end(), op);
      if (++it != collectives.end()) {
        if (*it == to) return true;
        todo.push_back({*it, place});
      }
    }
  }
  return false;
}

class FiringGroups : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(FiringGroups, TrainBitForBitAsAnActorPerOp) {
  const auto& [name, places] = GetParam();
  fixture_run grouped(name, places, false), per_op(name, places, true);
  const std::vector<tensor> a = grouped.train(6), b = per_op.train(6);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bytes(a[i], b[i])) << "loss " << i;
  const auto pa = grouped.persistables(), pb = per_op.persistables();
  ASSERT_EQ(pa.size(), pb.size());
  ASSERT_FALSE(pa.empty());
  for (const auto& [key, value] : pa) {
    auto it = pb.find(key);
    ASSERT_NE(it, pb.end()) << key.first;
    EXPECT_TRUE(same_bytes(value, it->second)) << key.first << " on place " << key.second;
  }
}

TEST_P(FiringGroups, FollowersReadOnlyTheirGroupOnTheirHeadsPlaceAndStream) {
  const auto& [name, places] = GetParam();
  fixture_run grouped(name, places, false), per_op(name, places, true);
  grouped.train(1);
  per_op.train(1);
  const ssa_graph& g = grouped.exe.graph();
  const auto groups = grouped.exe.firing_groups();
  std::vector<int> group_of(g.ops.size(), -1);
  for (std::size_t k = 0; k < groups.size(); ++k)
    for (int id : groups[k]) {
      ASSERT_EQ(group_of[static_cast<std::size_t>(id)], -1) << "op " << id << " in two groups";
      group_of[static_cast<std::size_t>(id)] = static_cast<int>(k);
    }
  for (std::size_t id = 0; id < g.ops.size(); ++id) ASSERT_NE(group_of[id], -1) << "op " << id << " in no group";

  std::size_t followers = 0;
  for (const auto& group : groups) {
    const op_handle& head = g.ops[static_cast<std::size_t>(group.front())];
    std::set<int> enqueued = {head.id};
    for (std::size_t i = 1; i < group.size(); ++i, ++followers) {
      const op_handle& f = g.ops[static_cast<std::size_t>(group[i])];
      EXPECT_FALSE(is_collective(f.what) || is_collective(head.what)) << "op " << f.id;
      EXPECT_EQ(f.place, head.place) << "op " << f.id;
      EXPECT_EQ(f.what == op_handle::kind::fetch, head.what == op_handle::kind::fetch) << "op " << f.id;
      // Every writer of what it reads (none: a source, as its head is) was enqueued before
      // it by the same firing (stream order covers the read), or its work is done before
      // the work of one that was (an edge implied by another path, dropped).
      for (int v : f.inputs) {
        const int writer = g.vars[static_cast<std::size_t>(v)].generated_op;
        if (writer < 0 || enqueued.count(writer)) continue;
        EXPECT_TRUE(std::any_of(enqueued.begin(), enqueued.end(), [&](int e) { return ordered_by_edges(g, groups, writer, e); }))
            << "op " << f.id << " reads op " << writer << "'s output";
      }
      enqueued.insert(f.id);
    }
  }
  // What grouping is for: far fewer firings than op handles on these programs.
  EXPECT_GT(followers * 2, g.ops.size()) << groups.size() << " groups of " << g.ops.size() << " ops";
  std::cout << groups.size() << " groups of " << g.ops.size() << " ops\n";
  // And with an actor per op, none.
  for (const auto& group : per_op.exe.firing_groups()) EXPECT_EQ(group.size(), 1u);
}

// Implied edges dropped: the encoder's optimizer ops (AdamW after global-norm clipping) read
// the gradient's all-reduce, the clip's scale and (write after read) every reader of the
// parameter, each from another group; all but the scale come before it along other edges,
// so each clip and AdamW follows the group computing the norm, with no actor of its own.
TEST(FiringGroupsImpliedEdges, TheEncodersOptimizerOpsFollowTheNormsGroup) {
  for (int places : {1, 2}) {
    fixture_run grouped("encoder_classifier", places, false);
    grouped.train(1);
    const ssa_graph& g = grouped.exe.graph();
    std::size_t optimizers = 0;
    for (const auto& group : grouped.exe.firing_groups())
      for (std::size_t i = 0; i < group.size(); ++i) {
        const op_handle& h = g.ops[static_cast<std::size_t>(group[i])];
        if (h.what != op_handle::kind::computation || grouped.main.blocks(0).ops(h.op_index).type() != "adamw") continue;
        ++optimizers;
        EXPECT_GT(i, 0u) << "adamw op " << h.id << " heads a group on " << places << " places";
      }
    EXPECT_GT(optimizers, 0u);
  }
}

// Fired inline: a head that waits for one message (an optimizer op waiting only for its
// gradient's all-reduce, once the learning rate's edge is implied by its group's order) is
// fired by the thread that would send that message. Each such head reads its one writer's
// output, written on another stream.
TEST(FiringGroupsInline, OptimizerOpsWaitingForOneAllReduceFireInline) {
  for (const auto& [name, optimizer] : std::vector<std::pair<std::string, std::string>>{
           {"lr_schedule", "sgd"}, {"resnet_small", "momentum"}}) {
    fixture_run grouped(name, 2, false), per_op(name, 2, true);
    grouped.train(1);
    per_op.train(1);
    const ssa_graph& g = grouped.exe.graph();
    const std::vector<int> heads = grouped.exe.inline_firings();
    const std::set<int> inline_heads(heads.begin(), heads.end());
    std::size_t optimizers = 0;
    for (const op_handle& h : g.ops) {
      if (h.what != op_handle::kind::computation || grouped.main.blocks(0).ops(h.op_index).type() != optimizer) continue;
      ++optimizers;
      EXPECT_TRUE(inline_heads.count(h.id)) << name << ": " << optimizer << " op " << h.id << " has an op actor";
      std::set<int> writers;
      for (int v : h.inputs)
        if (g.vars[static_cast<std::size_t>(v)].generated_op >= 0) writers.insert(g.vars[static_cast<std::size_t>(v)].generated_op);
      EXPECT_TRUE(std::any_of(writers.begin(), writers.end(), [&](int w) { return is_collective(g.ops[static_cast<std::size_t>(w)].what); }))
          << name << ": " << optimizer << " op " << h.id << " reads no collective's output";
    }
    EXPECT_GT(optimizers, 0u) << name;
    EXPECT_TRUE(per_op.exe.inline_firings().empty()) << name << ": an actor per op fires nothing inline";
  }
}

// Counted by the step's thread: where every message of a step comes from the sources'
// groups or the collectives they complete (the MLP with its schedule, the ResNet: one group
// per place, then all-reduces in sequence, then optimizer ops waiting for one of them), no
// message goes through a CAF mailbox: no op actor at all. The encoder keeps two actors per
// place for its global norm (the sum of squares and the clip's max), whose messages come
// from the places' device threads.
TEST(FiringGroupsStepThread, SourceOnlyMessagesNeedNoOpActor) {
  for (const auto& [name, actors] : std::vector<std::pair<std::string, std::size_t>>{
           {"lr_schedule", 0}, {"resnet_small", 0}, {"encoder_classifier", 4}}) {
    fixture_run grouped(name, 2, false), per_op(name, 2, true);
    grouped.train(2);
    per_op.train(1);
    EXPECT_EQ(grouped.exe.op_actor_count(), actors) << name;
    // With an actor per op, every op handle but the step's first on each place and stream.
    EXPECT_GT(per_op.exe.op_actor_count(), per_op.exe.graph().ops.size() / 2) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(PaddleFixtures, FiringGroups, pe::testing::paddle_training_cases(),
                         pe::testing::paddle_training_case_name);

TEST(FiringGroupsTrace, EveryOpKeepsItsSpanAndNoHazard) {
  fixture_run grouped("resnet_small", 2, false);
  trace_recorder recorder;
  grouped.exe.trace(&recorder);
  grouped.train(3);
  grouped.exe.trace(nullptr);
  const ssa_graph& g = grouped.exe.graph();
  // check_hazards also asserts that every op fired exactly once per step.
  const auto violations = check_hazards({g, grouped.exe.program(), grouped.exe.place_names()}, recorder.events());
  for (const auto& v : violations) ADD_FAILURE() << v.message;
  EXPECT_EQ(recorder.events().size(), 3 * g.ops.size());
}

} // namespace

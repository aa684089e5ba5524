// Random ops across interruptions: dropout's masks depend on the step (kernel_context::
// next_call), so a run resumed from a checkpoint of step k (set_steps_done(k)) must draw
// what the uninterrupted run drew at steps k+1, k+2, ..., and so must a graph rebuilt for
// another fetch list. Checked on the actor executor (2 places) and the reference executor.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "graph/builder.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/exec/scope.hpp"
#include "graph/models/classifier.hpp"
#include "tests/support/batches.hpp"

namespace pe {
namespace {

/// An MLP with a dropout after its hidden layer (seeded, so runs repeat), trained with SGD.
model_programs mlp_with_dropout() {
  model_programs m;
  program_builder b(m.main, m.startup, 17);
  m.image = b.data("image", {-1, 12}, dtype::fp32);
  m.label = b.data("label", {-1, 1}, dtype::int64);
  const std::string hidden = b.fc(m.image, 16, "relu");
  const std::string dropped = b.unique_name("dropout") + ".tmp_0";
  b.append_op("dropout", {{"X", {hidden}}}, {{"Out", {dropped}}, {"Mask", {dropped + ".mask"}}},
              {{"dropout_prob", 0.5f}, {"seed", std::int32_t{11}}, {"is_test", false},
               {"dropout_implementation", std::string("upscale_in_train")}});
  finish_classifier(b, m, b.fc(dropped, 4, ""), "sgd", 0.1f, 0.f);
  return m;
}

feed_map batch(const model_programs& m, int step) {
  auto b = testing::argmax_batch(8, 12, 4, 900 + static_cast<std::uint64_t>(step));
  return {{m.image, b.image}, {m.label, b.label}};
}

float loss_of(const std::vector<tensor>& fetched) { return fetched.at(0).values<float>()[0]; }

std::vector<std::string> persistables(const model_programs& m) {
  std::vector<std::string> out;
  for (const auto& v : m.main.blocks(0).vars())
    if (v.persistable()) out.push_back(v.name());
  return out;
}

constexpr int steps = 6, checkpoint = 3;

TEST(ResumeSteps, AResumedActorExecutorDrawsTheUninterruptedRunsMasks) {
  const auto m = mlp_with_dropout();
  const std::vector<place> places{place::cpu(0), place::cpu(1)};
  parallel_executor whole(places, m.startup, m.main);
  std::vector<float> expected;
  std::map<std::string, tensor> saved;
  for (int s = 1; s <= steps; ++s) {
    expected.push_back(loss_of(whole.run(batch(m, s), {m.loss})));
    if (s == checkpoint)
      for (const auto& name : persistables(m)) saved[name] = whole.host_value(name, 0).clone();
  }
  for (const bool told : {true, false}) {
    SCOPED_TRACE(told ? "set_steps_done(3)" : "not told");
    parallel_executor resumed(places, m.startup, m.main);
    for (const auto& [name, value] : saved) resumed.set_persistable(name, value);
    if (told) resumed.set_steps_done(checkpoint);
    std::vector<float> got;
    for (int s = checkpoint + 1; s <= steps; ++s) got.push_back(loss_of(resumed.run(batch(m, s), {m.loss})));
    const std::vector<float> rest(expected.begin() + checkpoint, expected.end());
    if (told) EXPECT_EQ(got, rest);   // bit for bit: the same masks, the same sums
    else EXPECT_NE(got, rest);        // the masks of steps 1..3 again
  }
}

TEST(ResumeSteps, ARebuiltGraphKeepsDrawingWhereTheLastOneStopped) {
  // Alternating fetch lists rebuild the graph every step; the losses stay those of one graph.
  const auto m = mlp_with_dropout();
  const std::vector<place> places{place::cpu(0), place::cpu(1)};
  parallel_executor one_graph(places, m.startup, m.main);
  parallel_executor rebuilt(places, m.startup, m.main);
  for (int s = 1; s <= steps; ++s) {
    const float want = loss_of(one_graph.run(batch(m, s), {m.loss}));
    const auto fetch = s % 2 == 0 ? std::vector<std::string>{m.loss, m.accuracy} : std::vector<std::string>{m.loss};
    EXPECT_EQ(loss_of(rebuilt.run(batch(m, s), fetch)), want) << "step " << s;
  }
}

TEST(ResumeSteps, AResumedReferenceExecutorDrawsTheUninterruptedRunsMasks) {
  const auto m = mlp_with_dropout();
  scope whole_vars;
  reference_executor(m.startup, whole_vars).run({}, {});
  reference_executor whole(m.main, whole_vars);
  std::vector<float> expected;
  std::map<std::string, tensor> saved;
  for (int s = 1; s <= steps; ++s) {
    expected.push_back(loss_of(whole.run(batch(m, s), {m.loss})));
    if (s == checkpoint)
      for (const auto& name : persistables(m)) saved[name] = whole_vars.get(name).clone();
  }
  scope vars;
  reference_executor(m.startup, vars).run({}, {});
  for (const auto& [name, value] : saved) vars.var(name) = value.clone();
  reference_executor resumed(m.main, vars);
  resumed.set_steps_done(checkpoint);
  for (int s = checkpoint + 1; s <= steps; ++s)
    EXPECT_EQ(loss_of(resumed.run(batch(m, s), {m.loss})), expected[static_cast<std::size_t>(s - 1)]) << "step " << s;
}

} // namespace
} // namespace pe

// Tracing the actor executor: what is recorded, the Chrome trace, and the hazard checker
// on real training steps.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "actors/hazard_check.hpp"
#include "actors/parallel_executor.hpp"
#include "actors/trace.hpp"
#include "actors/trace_export.hpp"
#include "graph/models/mlp.hpp"
#include "tests/support/batches.hpp"

namespace {

using namespace pe;

struct traced_training {
  model_programs m;
  std::unique_ptr<parallel_executor> exe;
  feed_map feed;

  traced_training(int places, build_strategy build = {}) {
    mlp_config c;
    c.input_width = 16;
    c.hidden = {12};
    c.classes = 4;
    m = build_mlp(c);
    std::vector<place> ps;
    for (int p = 0; p < places; ++p) ps.push_back(place::cpu(p));
    exe = std::make_unique<parallel_executor>(ps, m.startup, m.main, build, execution_strategy{2});
    auto b = pe::testing::argmax_batch(10, 16, 4, 1);
    feed = {{m.image, b.image}, {m.label, b.label}};
  }

  trace_source source() const { return {exe->graph(), exe->program(), exe->place_names()}; }
};

TEST(trace, records_every_firing_of_the_selected_steps) {
  traced_training t(2);
  trace_recorder recorder(2, 3);
  t.exe->trace(&recorder);
  for (int s = 0; s < 4; ++s) t.exe->run(t.feed, {t.m.loss});
  auto events = recorder.events();
  std::size_t ops = t.exe->graph().ops.size();
  EXPECT_EQ(events.size(), 2 * ops);
  std::set<std::uint64_t> steps;
  for (const auto& e : events) {
    steps.insert(e.step);
    EXPECT_LE(e.start_ns, e.end_ns);
  }
  EXPECT_EQ(steps, (std::set<std::uint64_t>{2, 3}));
  EXPECT_TRUE(check_hazards(t.source(), events).empty());
}

TEST(trace, nothing_is_recorded_when_off) {
  traced_training t(2);
  trace_recorder recorder;
  t.exe->trace(&recorder);
  t.exe->run(t.feed, {t.m.loss});
  t.exe->trace(nullptr);
  t.exe->run(t.feed, {t.m.loss});
  EXPECT_EQ(recorder.events().size(), t.exe->graph().ops.size());
}

TEST(trace, real_steps_have_no_hazards_in_either_mode) {
  for (auto mode : {build_strategy::reduce_mode::all_reduce, build_strategy::reduce_mode::reduce}) {
    build_strategy build;
    build.reduce = mode;
    traced_training t(3, build);
    trace_recorder recorder;
    t.exe->trace(&recorder);
    for (int s = 0; s < 20; ++s) t.exe->run(t.feed, {t.m.loss});
    auto violations = check_hazards(t.source(), recorder.events());
    for (const auto& v : violations) ADD_FAILURE() << v.message;
  }
}

TEST(trace, checker_reports_missing_and_overlapping_firings) {
  traced_training t(2);
  trace_recorder recorder;
  t.exe->trace(&recorder);
  t.exe->run(t.feed, {t.m.loss});
  auto events = recorder.events();
  ASSERT_FALSE(events.empty());
  // Drop one firing: it did not fire once.
  auto missing = events;
  int dropped = missing.back().op;
  missing.pop_back();
  auto v1 = check_hazards(t.source(), missing);
  ASSERT_FALSE(v1.empty());
  EXPECT_NE(v1[0].message.find("fired 0 times"), std::string::npos) << v1[0].message;
  EXPECT_NE(v1[0].message.find(describe(t.exe->graph().ops[static_cast<std::size_t>(dropped)],
                                        t.exe->program(), t.exe->place_names())),
            std::string::npos);
  // Make place 0's first mul (a reader of fc_0.w_0@0) end after every op started, so after
  // the sgd writing fc_0.w_0@1 started: a write-after-read violation.
  auto moved = events;
  int mul = -1;
  for (const auto& op : t.exe->graph().ops)
    if (mul < 0 && op.what == op_handle::kind::computation && op.place == 0 &&
        op_type_name(op, t.exe->program()) == "mul")
      mul = op.id;
  std::int64_t last_start = 0;
  for (const auto& e : moved) last_start = std::max(last_start, e.start_ns);
  for (auto& e : moved)
    if (e.op == mul) e.end_ns = last_start + 1;
  auto v2 = check_hazards(t.source(), moved);
  bool war = false;
  for (const auto& v : v2)
    war = war || (v.message.find("write after read") != std::string::npos &&
                  v.message.find("fc_0.w_0@0 on cpu:0") != std::string::npos);
  EXPECT_TRUE(war) << (v2.empty() ? "no violations" : v2[0].message);
}

TEST(trace, chrome_trace_has_tracks_spans_flows_and_steps) {
  traced_training t(2);
  trace_recorder recorder;
  t.exe->trace(&recorder);
  t.exe->run(t.feed, {t.m.loss});
  t.exe->run(t.feed, {t.m.loss});
  std::stringstream out;
  write_chrome_trace(out, t.source(), recorder.events());
  auto doc = nlohmann::json::parse(out.str());
  std::size_t spans = 0, starts = 0, finishes = 0, steps = 0;
  std::set<std::string> names;
  bool mul_with_versions = false;
  for (const auto& e : doc["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph == "X" && e["cat"] == "step") ++steps;
    else if (ph == "X") {
      ++spans;
      names.insert(e["name"].get<std::string>());
      if (e["name"] == "mul" && e["args"]["inputs"].size() == 2 &&
          e["args"]["inputs"][1] == "fc_0.w_0@0")
        mul_with_versions = true;
    }
    if (ph == "s") ++starts;
    if (ph == "f") ++finishes;
  }
  EXPECT_EQ(spans, 2 * t.exe->graph().ops.size());
  EXPECT_EQ(steps, 2u);
  EXPECT_GT(starts, spans / 2);
  EXPECT_EQ(starts, finishes);
  EXPECT_TRUE(names.contains("all_reduce"));
  EXPECT_TRUE(mul_with_versions);
  auto tracks = doc["otherData"]["tracks"];
  EXPECT_EQ(tracks[0], "cpu:0");
  EXPECT_EQ(tracks[1], "cpu:1");
  EXPECT_EQ(doc["otherData"]["places"].size(), 2u);
}

} // namespace

// The hazard checker against real schedules: it catches the write-after-read race a graph
// without its dummy edges allows, and finds none in hundreds of random in-place programs
// whose results match the reference executor bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "actors/hazard_check.hpp"
#include "actors/parallel_executor.hpp"
#include "graph/exec/reference_executor.hpp"
#include "actors/trace.hpp"
#include "graph/builder.hpp"
#include "tests/support/grad_check.hpp"
#include "core/place_list.hpp"

namespace {

using namespace pe;

/// Same dtype, shape and bytes; otherwise the first differing element.
::testing::AssertionResult bitwise_equal(const tensor& got, const tensor& want) {
  if (got.type() != want.type() || got.shape() != want.shape())
    return ::testing::AssertionFailure() << "got " << to_string(got.type()) << " "
                                         << to_string(got.shape()) << ", want "
                                         << to_string(want.type()) << " " << to_string(want.shape());
  if (std::memcmp(got.raw(), want.raw(), got.bytes()) == 0) return ::testing::AssertionSuccess();
  auto g = got.values<float>();
  auto w = want.values<float>();
  std::size_t i = 0;
  while (std::memcmp(&g[i], &w[i], sizeof(float)) == 0) ++i;
  return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want " << w[i];
}

trace_source source_of(const parallel_executor& exe) {
  return {exe.graph(), exe.program(), exe.place_names()};
}

// --- write after read without the dummy edges -------------------------------------------

/// y = mul(x, relu(w)) reads x@0 for milliseconds; x = scale(x) overwrites it in place
/// (x@1). Only the WAR dummy edge orders the two. The scale is a source; the mul fires one
/// message after the relu, so without the edge the scale is enqueued on the place's stream
/// before the mul and overwrites x before the mul reads it.
struct war_program {
  proto::ProgramDesc main, startup;
  feed_map feed;
  std::vector<std::string> fetch = {"y", "x"};

  war_program() {
    program_builder b(main, startup, 7);
    b.data("x", {-1, 512}, dtype::fp32);
    b.parameter("w", {512, 512}, program_builder::init::xavier_uniform);
    b.append_op("relu", {{"X", {"w"}}}, {{"Out", {"w_relu"}}}, {});
    b.append_op("mul", {{"X", {"x"}}, {"Y", {"w_relu"}}}, {{"Out", {"y"}}}, {});
    b.append_op("scale", {{"X", {"x"}}}, {{"Out", {"x"}}}, {{"scale", 2.f}});
    feed = {{"x", pe::testing::random_tensor({256, 512}, 11)}};
  }
};

TEST(hazard, checker_catches_the_overwrite_that_missing_war_edges_allow) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the overwrite races with the read for real: ThreadSanitizer reports it";
#endif
  war_program p;
  build_strategy unsafe;
  unsafe.skip_hazard_edges = true;
  execution_strategy exec{2};
  exec.actor_per_op = true; // a firing group would enqueue the mul right after the relu
  parallel_executor exe(make_cpu_places(1), p.startup, p.main, unsafe, exec);
  trace_recorder recorder;
  exe.trace(&recorder);
  // The scale is ready when the step starts, the mul only after the relu's message: the
  // scale's kernel runs first. One step usually shows it; a few more rule out bad luck.
  std::vector<hazard_violation> violations;
  for (int step = 0; step < 20 && violations.empty(); ++step) {
    exe.run(p.feed, p.fetch);
    violations = check_hazards(source_of(exe), recorder.events());
  }
  ASSERT_FALSE(violations.empty()) << "20 steps without the scale overlapping the mul";
  const auto& v = violations.front();
  EXPECT_NE(v.message.find("op #1 (mul) on cpu:0"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("op #2 (scale) on cpu:0"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("x@0 on cpu:0"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("write after read"), std::string::npos) << v.message;
}

TEST(hazard, war_edges_keep_the_read_before_the_overwrite) {
  war_program p;
  parallel_executor exe(make_cpu_places(1), p.startup, p.main, {}, execution_strategy{2});
  scope ref_vars;
  reference_executor(p.startup, ref_vars).run({}, {});
  reference_executor ref(p.main, ref_vars);
  trace_recorder recorder;
  exe.trace(&recorder);
  for (int step = 0; step < 20; ++step) {
    auto got = exe.run(p.feed, p.fetch);
    auto want = ref.run(p.feed, p.fetch);
    for (std::size_t k = 0; k < p.fetch.size(); ++k)
      EXPECT_TRUE(bitwise_equal(got[k], want[k])) << p.fetch[k] << ", step " << step;
  }
  EXPECT_EQ(recorder.events().size(), 20 * exe.graph().ops.size());
  for (const auto& v : check_hazards(source_of(exe), recorder.events())) ADD_FAILURE() << v.message;
}

// --- random in-place programs -----------------------------------------------------------

/// An inference program over fp32 variables of two shapes: batch-shaped [-1, width] (fed
/// inputs and what ops derive from them) and [width] (fill_constant and what ops derive from
/// those). Its ops (scale, elementwise_add, relu, tanh, sigmoid, sum, fill_constant) write
/// a new name, one of their own inputs (in place), or another existing name of the same
/// shape, so names get several versions.
struct random_program {
  proto::ProgramDesc main, startup;
  std::int64_t width = 0;
  std::vector<std::string> feeds;   ///< the fed inputs: each is read before any op writes it
  std::vector<std::string> fetches; ///< batch-shaped names
  bool in_place = false;            ///< some op writes one of its inputs
};

random_program make_random_program(std::uint64_t seed) {
  random_program p;
  program_builder b(p.main, p.startup, seed);
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto real = [&](float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); };
  auto pick = [&](const std::vector<std::string>& from) {
    return from[static_cast<std::size_t>(uniform(0, static_cast<int>(from.size()) - 1))];
  };

  p.width = uniform(1, 8);
  enum shape_kind { batch, row };
  std::vector<std::string> names[2]; // existing names by shape
  std::vector<std::string> data;     // declared inputs x0, x1, ...
  std::set<std::string> unread;      // inputs no op read yet: they must not be written first
  for (int k = 0, n = uniform(1, 3); k < n; ++k) {
    data.push_back(b.data("x" + std::to_string(k), {-1, p.width}, dtype::fp32));
    names[batch].push_back(data.back());
    unread.insert(data.back());
  }

  const std::vector<std::string> types = {"scale", "elementwise_add", "relu",         "tanh",
                                          "sigmoid", "sum",             "fill_constant"};
  std::discrete_distribution<int> type_of({3, 3, 2, 2, 2, 2, 1});
  for (int i = 0, ops = uniform(5, 25); i < ops; ++i) {
    // The first op reads x0, so the program has a fed input.
    std::string type = types[static_cast<std::size_t>(i == 0 ? 0 : type_of(rng))];
    shape_kind shape = type == "fill_constant" || (i > 0 && !names[row].empty() && uniform(0, 4) == 0)
                           ? row
                           : batch;
    slot_args inputs;
    std::vector<std::pair<std::string, attribute>> attrs;
    std::vector<std::string> same_shape; // inputs of the output's shape: in-place candidates
    auto first = [&] { return i == 0 ? std::string("x0") : pick(names[shape]); };
    if (type == "fill_constant") {
      attrs = {{"shape", std::vector<std::int64_t>{p.width}},
               {"value", real(-1.f, 1.f)},
               {"dtype", static_cast<std::int32_t>(dtype::fp32)}};
    } else if (type == "elementwise_add") {
      same_shape = {first()};
      bool broadcast = shape == batch && !names[row].empty() && uniform(0, 2) == 0;
      std::string y = pick(names[broadcast ? row : shape]);
      if (!broadcast) same_shape.push_back(y);
      inputs = {{"X", {same_shape[0]}}, {"Y", {y}}};
    } else if (type == "sum") {
      same_shape = {first()};
      for (int k = uniform(1, 2); k-- > 0;) same_shape.push_back(pick(names[shape]));
      inputs = {{"X", same_shape}};
    } else {
      same_shape = {first()};
      inputs = {{"X", same_shape}};
      if (type == "scale")
        attrs = {{"scale", real(-1.5f, 1.5f)},
                 {"bias", real(-0.5f, 0.5f)},
                 {"bias_after_scale", uniform(0, 1) == 1}};
    }
    for (const auto& x : same_shape) unread.erase(x);

    std::vector<std::string> others; // overwrite candidates: same shape, not read here
    for (const auto& n : names[shape])
      if (!unread.contains(n) && std::find(same_shape.begin(), same_shape.end(), n) == same_shape.end())
        others.push_back(n);
    int how = uniform(0, 19); // 0-7: new name, 8-14: in place, 15-19: overwrite another
    std::string out;
    if (how >= 8 && how < 15 && !same_shape.empty()) {
      out = pick(same_shape);
      p.in_place = true;
    } else if (how >= 15 && !others.empty()) {
      out = pick(others);
    } else {
      out = b.unique_name(shape == batch ? "t" : "r");
      names[shape].push_back(out);
    }
    b.append_op(type, inputs, {{"Out", {out}}}, attrs);
  }

  for (const auto& x : data)
    if (!unread.contains(x)) p.feeds.push_back(x);
  for (const auto& n : names[batch])
    if (!unread.contains(n)) p.fetches.push_back(n);
  std::shuffle(p.fetches.begin(), p.fetches.end(), rng);
  p.fetches.resize(static_cast<std::size_t>(uniform(1, std::min(4, static_cast<int>(p.fetches.size())))));
  return p;
}

/// "t_0 = scale(x0); x0 = sum(t_0, x1); ..." for failure messages.
std::string listing(const proto::ProgramDesc& main) {
  std::string out;
  for (const auto& op : main.blocks(0).ops()) {
    std::string args;
    for (const auto& slot : op.inputs())
      for (const auto& a : slot.arguments()) args += (args.empty() ? "" : ", ") + a;
    out += op.outputs(0).arguments(0) + " = " + op.type() + "(" + args + "); ";
  }
  return out;
}

TEST(hazard, random_in_place_programs_match_the_reference_without_hazards) {
  constexpr std::uint64_t programs = 500;
  int with_in_place = 0;
  int with_empty_place = 0;
  int most_versions = 0;
  for (std::uint64_t seed = 1; seed <= programs; ++seed) {
    random_program p = make_random_program(seed);
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int places = uniform(1, 4);
    const int batch = uniform(1, 9);
    const int steps = uniform(1, 2);
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(places) + " places, batch " +
                 std::to_string(batch) + ": " + listing(p.main));

    for (sync_mode sync : {sync_mode::event, sync_mode::wait}) {
    SCOPED_TRACE(sync == sync_mode::event ? "--sync event" : "--sync wait");
    trace_recorder recorder;
    parallel_executor exe(make_cpu_places(places), p.startup, p.main, {}, execution_strategy{2, sync});
    exe.trace(&recorder);
    // Untraced, a step's tail (its ops after the fetches and the feeds' readers) runs while
    // the next step starts (execution_strategy::overlap_steps): in-place writes must keep
    // their order across steps too.
    parallel_executor overlapped(make_cpu_places(places), p.startup, p.main, {}, execution_strategy{2, sync});
    scope ref_vars;
    reference_executor ref(p.main, ref_vars);
    for (int step = 0; step < steps; ++step) {
      feed_map feed;
      for (const auto& x : p.feeds)
        feed.emplace(x, pe::testing::random_tensor({batch, p.width}, rng()));
      feed_map original;
      for (const auto& [name, value] : feed) original.emplace(name, value.clone());
      auto got = exe.run(feed, p.fetches);
      auto got_overlapped = overlapped.run(feed, p.fetches);
      auto want = ref.run(feed, p.fetches);
      // Programs update fed variables in place: the executors must copy those feeds.
      for (const auto& [name, value] : feed)
        EXPECT_TRUE(bitwise_equal(value, original.at(name))) << "feed " << name << " was modified";
      for (std::size_t k = 0; k < p.fetches.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(got[k], want[k])) << "fetch " << p.fetches[k] << ", step " << step;
        EXPECT_TRUE(bitwise_equal(got_overlapped[k], want[k]))
            << "fetch " << p.fetches[k] << ", step " << step << ", untraced (overlapping steps)";
      }
    }
    auto events = recorder.events();
    EXPECT_EQ(events.size(), static_cast<std::size_t>(steps) * exe.graph().ops.size());
    for (const auto& v : check_hazards(source_of(exe), events)) ADD_FAILURE() << v.message;
    if (HasFailure()) return; // the first failing program is the repro
    if (sync == sync_mode::wait) continue;

    with_in_place += p.in_place ? 1 : 0;
    with_empty_place += batch < places ? 1 : 0;
    for (const auto& v : exe.graph().vars) most_versions = std::max(most_versions, v.version + 1);
    }
  }
  std::cout << programs << " programs: " << with_in_place << " with in-place updates, "
            << with_empty_place << " with a place of 0 rows, up to " << most_versions
            << " versions of one name\n";
  EXPECT_GT(with_in_place, static_cast<int>(programs * 3 / 10));
  EXPECT_GT(with_empty_place, 0);
  EXPECT_GE(most_versions, 3);
}

} // namespace

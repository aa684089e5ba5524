// pe-actor-trace end to end, on a trace the real pe-actor-run records and on hand-made ones:
// the trace file's content, summarize's report, timeline's SVG, merge's joining of a job's
// per-process traces (hand-made and from two real processes) and the tool's errors.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "idx_files.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using json = nlohmann::json;
using testing::temp_dir;

using testing::run_result;
using testing::slurp;

/// Runs `binary` with `args` (shell words), capturing its output in `dir`.
run_result run(const std::string& binary, const std::string& args, const temp_dir& dir) {
  return testing::run_binary(binary, args, dir.path());
}

run_result trace_tool(const std::string& args, const temp_dir& dir) {
  return run(PE_TRACE_BINARY, args, dir);
}

bool is_span(const json& e) {
  return e.at("ph") == "X" && e.at("cat") != "step";
}

/// Whether every tag of `xml` is closed in order (no text-level checks): the SVG parses.
::testing::AssertionResult well_formed(const std::string& xml) {
  std::vector<std::string> open;
  for (auto lt = xml.find('<'); lt != std::string::npos; lt = xml.find('<', lt + 1)) {
    auto gt = xml.find('>', lt);
    if (gt == std::string::npos)
      return ::testing::AssertionFailure() << "unterminated tag at " << lt;
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    std::string name = tag.substr(0, tag.find_first_of(" \n/", tag[0] == '/' ? 1 : 0));
    if (tag.ends_with("/"))
      continue;
    if (!tag.starts_with("/")) {
      open.push_back(name);
    } else if (open.empty() || "/" + open.back() != name) {
      return ::testing::AssertionFailure() << "<" << tag << "> closes "
                                           << (open.empty() ? "nothing" : open.back());
    } else {
      open.pop_back();
    }
  }
  if (!open.empty())
    return ::testing::AssertionFailure() << "<" << open.back() << "> is never closed";
  return ::testing::AssertionSuccess();
}

/// The non-empty lines of `text` from the one starting with `first` up to (not including)
/// the next line starting with `stop`.
std::vector<std::string> section(const std::string& text, const std::string& first,
                                 const std::string& stop) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (inside && line.starts_with(stop))
      break;
    inside = inside || line.starts_with(first);
    if (inside && !line.empty())
      lines.push_back(line);
  }
  return lines;
}

/// A real trace: the mlp on two places, 5 steps, steps 2 and 3 recorded.
class TraceTool : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<temp_dir>("trace_tool");
    path_ = dir_->file("t.json");
    auto r = run(pe::testing::pe_actor_run_binary(),
                 "--places cpu:2 --steps 5 --trace " + path_ + " --trace-steps 2:3 --metrics " +
                   dir_->file("metrics.json"),
                 *dir_);
    ASSERT_EQ(r.status, 0) << r.err;
    trace_ = json::parse(slurp(path_));
    metrics_ = json::parse(slurp(dir_->file("metrics.json")));
  }
  static void TearDownTestSuite() { dir_.reset(); }

  /// The spans of `step`.
  static std::vector<json> spans(std::uint64_t step) {
    std::vector<json> out;
    for (const auto& e : trace_.at("traceEvents"))
      if (is_span(e) && e.at("args").at("step") == step)
        out.push_back(e);
    return out;
  }

  static inline std::unique_ptr<temp_dir> dir_;
  static inline std::string path_;
  static inline json trace_;
  static inline json metrics_;
};

TEST_F(TraceTool, RunRecordsOnlyTheSelectedStepsWithSpansAndMessages) {
  EXPECT_EQ(trace_.at("otherData").at("tool"), "pe-actor");
  EXPECT_EQ(trace_.at("otherData").at("places"), json({"cpu:0", "cpu:1"}));
  std::map<int, std::string> track_names;
  std::set<std::string> step_spans, span_tracks;
  std::set<std::uint64_t> steps;
  std::map<std::uint64_t, int> arrow_ends; // flow id -> "s" count + 10 * "f" count
  std::size_t span_count = 0, all_reduces = 0;
  for (const auto& e : trace_.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      track_names[e.at("tid").get<int>()] = e.at("args").at("name");
    else if (e.at("ph") == "X" && e.at("cat") == "step")
      step_spans.insert(e.at("name").get<std::string>());
    else if (e.at("ph") == "s")
      arrow_ends[e.at("id").get<std::uint64_t>()] += 1;
    else if (e.at("ph") == "f")
      arrow_ends[e.at("id").get<std::uint64_t>()] += 10;
  }
  for (const auto& e : trace_.at("traceEvents")) {
    if (!is_span(e))
      continue;
    ++span_count;
    steps.insert(e.at("args").at("step").get<std::uint64_t>());
    span_tracks.insert(track_names.at(e.at("tid").get<int>()));
    all_reduces += e.at("name") == "all_reduce";
    EXPECT_GE(e.at("dur").get<double>(), 0);
  }
  EXPECT_EQ(steps, (std::set<std::uint64_t>{2, 3}));
  EXPECT_EQ(step_spans, (std::set<std::string>{"step 2", "step 3"}));
  EXPECT_EQ(spans(2).size(), spans(3).size()) << "every op fires once per step";
  EXPECT_TRUE(span_tracks.contains("cpu:0") && span_tracks.contains("cpu:1") &&
              span_tracks.contains("collectives"));
  EXPECT_GT(all_reduces, 0u);
  EXPECT_GT(arrow_ends.size(), span_count / 2);
  for (const auto& [id, ends] : arrow_ends)
    EXPECT_EQ(ends, 11) << "message " << id << " has one start and one end";
  EXPECT_EQ(metrics_.at("trace").at("file"), path_);
  EXPECT_EQ(metrics_.at("trace").at("events"), span_count);
  EXPECT_FALSE(metrics_.contains("hazards"));
  EXPECT_EQ(metrics_.at("steps").size(), 5u) << "training itself ran all steps";
}

TEST_F(TraceTool, SummarizeListsEveryOpTypeAndACriticalPathEndingAtTheLastSpan) {
  auto r = trace_tool("summarize " + path_, *dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("2 steps (2..3) on cpu:0 cpu:1"), std::string::npos) << r.out;
  auto op_types = section(r.out, "time per op type", "track utilisation");
  std::set<std::string> types;
  for (std::uint64_t step : {2, 3})
    for (const auto& s : spans(step))
      types.insert(s.at("name").get<std::string>());
  for (const auto& type : types)
    EXPECT_TRUE(std::any_of(op_types.begin(), op_types.end(), [&](const std::string& line) {
      return line.starts_with("  " + type + " ");
    })) << type << " missing in\n" << r.out;
  EXPECT_EQ(op_types.size(), types.size() + 2) << r.out; // plus heading and column names
  for (const char* track : {"  cpu:0 ", "  cpu:1 ", "  collectives "})
    EXPECT_NE(r.out.find(track), std::string::npos) << track;

  for (std::uint64_t step : {2, 3}) {
    auto all = spans(step);
    auto last = *std::max_element(all.begin(), all.end(), [](const json& a, const json& b) {
      return a.at("ts").get<double>() + a.at("dur").get<double>() <
             b.at("ts").get<double>() + b.at("dur").get<double>();
    });
    auto path = section(r.out, "step " + std::to_string(step) + ":", "  idle gaps");
    ASSERT_GE(path.size(), 4u) << r.out; // step line, path line, column names, spans
    EXPECT_NE(path[1].find("critical path:"), std::string::npos) << path[1];
    auto label = last.at("args").at("label").get<std::string>();
    EXPECT_TRUE(path.back().ends_with("  " + label)) << path.back() << " vs " << label;
  }
}

TEST_F(TraceTool, TimelineDrawsEverySpanOfTheStepOnLabelledLanes) {
  auto svg_path = dir_->file("step2.svg");
  auto r = trace_tool("timeline " + path_ + " -o " + svg_path + " --step 2", *dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  auto svg = slurp(svg_path);
  EXPECT_TRUE(svg.starts_with("<svg ")) << svg.substr(0, 100);
  EXPECT_TRUE(well_formed(svg));
  std::size_t rects = 0;
  for (auto at = svg.find("<rect class=\"span\""); at != std::string::npos;
       at = svg.find("<rect class=\"span\"", at + 1))
    ++rects;
  EXPECT_EQ(rects, spans(2).size());
  for (const char* lane : {">cpu:0</text>", ">cpu:1</text>", ">collectives</text>"})
    EXPECT_NE(svg.find(lane), std::string::npos) << lane;
  EXPECT_NE(svg.find("<title>" + spans(2).front().at("args").at("label").get<std::string>()),
            std::string::npos) << "a tooltip per span";
  EXPECT_NE(svg.find(">collective</text>"), std::string::npos) << "the legend";

  auto missing = trace_tool("timeline " + path_ + " -o " + svg_path + " --step 7", *dir_);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("step 7 is not in the trace (it has steps 2..3)"), std::string::npos)
    << missing.err;
}

TEST(TraceToolOnHandMadeTraces, CriticalPathFollowsTheLastMessageAndGapsAreListed) {
  // cpu:0: a [0, 10], c [25, 30]; cpu:1: b [0, 20], d [21, 24]. c waits for a and b; b's
  // message arrives last, so the path is b, c: 20 us in spans + 5 us waiting.
  auto span = [](int tid, const char* name, double ts, double dur) {
    return json{{"ph", "X"}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur},
                {"name", name}, {"cat", "computation"},
                {"args", {{"step", 1}, {"label", std::string(name) + " on " +
                                                   (tid == 0 ? "cpu:0" : "cpu:1")}}}};
  };
  auto arrow = [](int id, int from_tid, double from_ts, int to_tid, double to_ts) {
    return std::vector<json>{
      {{"ph", "s"}, {"pid", 1}, {"tid", from_tid}, {"ts", from_ts}, {"id", id}},
      {{"ph", "f"}, {"pid", 1}, {"tid", to_tid}, {"ts", to_ts}, {"id", id}, {"bp", "e"}}};
  };
  json events = {span(0, "mul", 0, 10), span(1, "relu", 0, 20), span(0, "sgd", 25, 5),
                 span(1, "mean", 21, 3),
                 {{"ph", "X"}, {"pid", 1}, {"tid", 2}, {"ts", 0}, {"dur", 30},
                  {"name", "step 1"}, {"cat", "step"}, {"args", {{"step", 1}}}}};
  for (const auto& a : {arrow(1, 0, 10, 0, 25), arrow(2, 1, 20, 0, 25), arrow(3, 1, 20, 1, 21)})
    for (const auto& end : a)
      events.push_back(end);
  temp_dir dir("trace_tool_hand_made");
  std::ofstream(dir.file("h.json"))
    << json{{"traceEvents", events},
            {"otherData", {{"tool", "pe-actor"}, {"places", {"cpu:0", "cpu:1"}},
                           {"tracks", {"cpu:0", "cpu:1", "steps"}}}}}.dump();

  auto r = trace_tool("summarize " + dir.file("h.json") + " --gap-us 4", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  auto path = section(r.out, "step 1:", "  idle gaps");
  ASSERT_EQ(path.size(), 5u) << r.out;
  EXPECT_NE(path[1].find("2 spans, 30.0 us = 25.0 us in spans + 5.0 us waiting"),
            std::string::npos) << path[1];
  EXPECT_EQ(path[3], "         0.0      20.0       0.0  relu on cpu:1");
  EXPECT_EQ(path[4], "        25.0       5.0       5.0  sgd on cpu:0");
  auto gaps = section(r.out, "  idle gaps", "step");
  ASSERT_EQ(gaps.size(), 3u) << r.out;
  EXPECT_EQ(gaps[0], "  idle gaps over 4.0 us:");
  EXPECT_EQ(gaps[1], "  cpu:0               10.0 ..       25.0 us (15.0 us), after mul on "
                     "cpu:0, before sgd on cpu:0");
  EXPECT_EQ(gaps[2], "  cpu:1               24.0 ..       30.0 us (6.0 us), after mean on "
                     "cpu:1, to the step's end");
  EXPECT_NE(r.out.find("  cpu:0                                   15.0 us    50.0 %"),
            std::string::npos) << r.out;
}

struct bad_trace {
  const char* name;
  const char* content;
  const char* message; ///< part of the error line
};

class TraceToolRejects : public ::testing::TestWithParam<bad_trace> {};

TEST_P(TraceToolRejects, FilesThatAreNoPeActorTraceWithStatusTwo) {
  temp_dir dir("trace_tool_rejects");
  std::ofstream(dir.file("bad.json")) << GetParam().content;
  for (const char* command : {"summarize ", "timeline -o out.svg "}) {
    auto r = trace_tool(command + dir.file("bad.json"), dir);
    EXPECT_EQ(r.status, 2) << command;
    EXPECT_TRUE(r.err.starts_with("pe-actor-trace: error: " + dir.file("bad.json") + ": "))
      << r.err;
    EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(
  BadFiles, TraceToolRejects,
  ::testing::Values(
    bad_trace{"garbage", "not json at all", "parse error"},
    bad_trace{"truncated", R"({"traceEvents": [)", "parse error"},
    bad_trace{"other_tool", R"({"traceEvents": [], "otherData": {"tool": "other"}})",
              "not a pe-actor trace"},
    bad_trace{"no_other_data", R"({"traceEvents": []})", "otherData"},
    bad_trace{"bad_track",
              R"({"traceEvents": [{"ph": "X", "tid": 5, "ts": 0, "dur": 1, "name": "mul",
                  "cat": "computation", "args": {"step": 1, "label": "mul"}}],
                  "otherData": {"tool": "pe-actor", "places": ["cpu:0"], "tracks": ["cpu:0"]}})",
              "track 5"},
    bad_trace{"dangling_arrow",
              R"({"traceEvents": [{"ph": "s", "tid": 0, "ts": 3, "id": 1}],
                  "otherData": {"tool": "pe-actor", "places": ["cpu:0"], "tracks": ["cpu:0"]}})",
              "message arrow 1"}),
  [](const auto& info) { return std::string(info.param.name); });

TEST(TraceToolCli, RejectsBadArgumentsWithStatusTwo) {
  temp_dir dir("trace_tool_args");
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
         {"", "expected a command"},
         {"draw t.json", "unknown command 'draw'"},
         {"summarize", "expected the trace FILE.json"},
         {"summarize /nonexistent/t.json", "/nonexistent/t.json: cannot open"},
         {"summarize t.json --gap-us -1", "--gap-us"},
         {"timeline t.json", "expected -o FILE.svg"},
         {"summarize a.json b.json", "too many positional"}}) {
    auto r = trace_tool(args, dir);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_TRUE(r.err.starts_with("pe-actor-trace: error: ")) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }
}

TEST(TraceToolCli, HelpDescribesBothCommands) {
  temp_dir dir("trace_tool_help");
  auto all = trace_tool("--help", dir);
  EXPECT_EQ(all.status, 0);
  for (const char* text : {"summarize FILE.json", "timeline FILE.json -o FILE.svg", "--gap-us",
                           "--no-messages", "critical path", "status 2"})
    EXPECT_NE(all.out.find(text), std::string::npos) << text;
  auto summarize = trace_tool("summarize --help", dir);
  EXPECT_EQ(summarize.status, 0);
  EXPECT_NE(summarize.out.find("--gap-us"), std::string::npos) << summarize.out;
  EXPECT_EQ(summarize.out.find("--no-messages"), std::string::npos) << summarize.out;
  auto timeline = trace_tool("timeline --help", dir);
  EXPECT_EQ(timeline.status, 0);
  EXPECT_NE(timeline.out.find("--output"), std::string::npos) << timeline.out;
}


// ---- merge: the traces of a job's processes as one ------------------------------------

/// A hand-made trace of rank `rank` of a job of `processes`: step 1 with a "mul" on cpu:0 at
/// [10.5, 15] us (enqueued at 9.25), its message to collective 0, and `collectives`
/// all_reduces on the collectives track, collective c at [20 + 40c, 50 + 40c] us.
json process_trace(int rank, int processes, std::int64_t clock_offset_ns, std::int64_t origin_ns,
                   int collectives = 1) {
  json events = {
    {{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", "pe-actor"}}}},
    {{"ph", "X"}, {"pid", 1}, {"tid", 0}, {"ts", 10.5}, {"dur", 4.5}, {"name", "mul"},
     {"cat", "computation"},
     {"args", {{"step", 1}, {"label", "op #1 (mul) on cpu:0"}, {"enqueued_us", 9.25}}}},
    {{"ph", "s"}, {"pid", 1}, {"tid", 0}, {"ts", 15.0}, {"id", 1}, {"name", "message"},
     {"cat", "message"}},
    {{"ph", "f"}, {"bp", "e"}, {"pid", 1}, {"tid", 1}, {"ts", 20.0}, {"id", 1},
     {"name", "message"}, {"cat", "message"}},
    {{"ph", "X"}, {"pid", 1}, {"tid", 2}, {"ts", 10.5}, {"dur", 40 * collectives + 0.5},
     {"name", "step 1"}, {"cat", "step"}, {"args", {{"step", 1}}}}};
  for (int c = 0; c < collectives; ++c)
    events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", 1}, {"ts", 20.0 + 40 * c}, {"dur", 30.0},
                      {"name", "all_reduce"}, {"cat", "collective"},
                      {"args", {{"step", 1}, {"label", "all_reduce(w" + std::to_string(c) + ")"},
                                {"collective", c}, {"enqueued_us", 9.25}}}});
  const char* tracks[] = {"cpu:0", "collectives", "steps"};
  for (int t = 0; t < 3; ++t)
    events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", t}, {"name", "thread_name"},
                      {"args", {{"name", tracks[t]}}}});
  return {{"traceEvents", events},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"tool", "pe-actor"},
            {"places", {"cpu:0"}},
            {"tracks", {"cpu:0", "collectives", "steps"}},
            {"process",
             {{"rank", rank},
              {"processes", processes},
              {"clock_offset_ns", clock_offset_ns},
              {"origin_ns", origin_ns}}}}}};
}

/// Writes `trace` as dir/name and returns its path.
std::string write(const temp_dir& dir, const std::string& name, const json& trace) {
  std::ofstream(dir.file(name)) << trace.dump();
  return dir.file(name);
}

/// The merged trace's events of process `pid` with phase `ph` (and name, when given).
std::vector<json> events_of(const json& merged, int pid, const std::string& ph,
                            const std::string& name = "") {
  std::vector<json> out;
  for (const auto& e : merged.at("traceEvents"))
    if (e.at("pid") == pid && e.at("ph") == ph && (name.empty() || e.at("name") == name))
      out.push_back(e);
  return out;
}

/// A merged arrow: where it starts and ends.
struct arrow {
  json from; ///< the "s" event
  json to;   ///< the "f" event
};

/// The merged trace's arrows of category `cat`; every id must have one start and one end.
std::vector<arrow> arrows(const json& merged, const std::string& cat) {
  std::map<std::uint64_t, arrow> by_id;
  std::map<std::uint64_t, int> ends; // "s" count + 10 * "f" count, over every category
  for (const auto& e : merged.at("traceEvents")) {
    if (e.at("ph") != "s" && e.at("ph") != "f")
      continue;
    auto id = e.at("id").get<std::uint64_t>();
    ends[id] += e.at("ph") == "s" ? 1 : 10;
    if (e.at("cat") == cat)
      (e.at("ph") == "s" ? by_id[id].from : by_id[id].to) = e;
  }
  for (const auto& [id, count] : ends)
    EXPECT_EQ(count, 11) << "flow id " << id << " has one start and one end";
  std::vector<arrow> out;
  for (const auto& [id, a] : by_id)
    out.push_back(a);
  return out;
}

TEST(TraceToolMerge, TwoProcessesShareRankZerosClockWithArrowsBothWays) {
  temp_dir dir("trace_merge_two");
  // Rank 1's clock runs 200 us ahead of rank 0's, and its trace started 700 us later on its
  // own clock: 500 us after rank 0's on rank 0's clock.
  auto rank0 = write(dir, "t.rank0.json", process_trace(0, 2, 0, 5'000'000'000));
  auto rank1 = write(dir, "t.rank1.json", process_trace(1, 2, 200'000, 5'000'700'000));
  auto r = trace_tool("merge -o " + dir.file("m.json") + " " + rank1 + " " + rank0, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("merged 2 traces (ranks 0..1) into " + dir.file("m.json") +
                       ": 28 events, 2 network arrows, the arrival skew of 1 collective"),
            std::string::npos) << r.out;
  auto merged = json::parse(slurp(dir.file("m.json")));

  const json& other = merged.at("otherData");
  EXPECT_EQ(other.at("tool"), "pe-actor");
  EXPECT_EQ(other.at("origin_ns"), 5'000'000'000);
  ASSERT_EQ(other.at("merged").size(), 2u);
  EXPECT_EQ(other.at("merged")[0].at("file"), rank0);
  EXPECT_EQ(other.at("merged")[0].at("rank"), 0);
  EXPECT_EQ(other.at("merged")[1].at("file"), rank1);
  EXPECT_EQ(other.at("merged")[1].at("clock_offset_ns"), 200'000);
  EXPECT_NE(other.at("clocks").get<std::string>().find("estimated from round trips"),
            std::string::npos);
  EXPECT_NE(other.at("clocks").get<std::string>().find("half a round trip"), std::string::npos);

  std::set<int> pids;
  for (const auto& e : merged.at("traceEvents"))
    pids.insert(e.at("pid").get<int>());
  EXPECT_EQ(pids, (std::set<int>{1, 2, 3})) << "the ranks, then the collective skew";
  for (int rank : {0, 1}) {
    auto names = events_of(merged, rank + 1, "M", "process_name");
    ASSERT_EQ(names.size(), 1u) << "the input's own \"pe-actor\" name is replaced";
    EXPECT_EQ(names[0].at("args").at("name"), "rank " + std::to_string(rank));
    auto sort = events_of(merged, rank + 1, "M", "process_sort_index");
    ASSERT_EQ(sort.size(), 1u);
    EXPECT_EQ(sort[0].at("args").at("sort_index"), rank);
    EXPECT_EQ(events_of(merged, rank + 1, "M", "thread_name").size(), 3u);
  }

  // Rank 0 keeps its times; rank 1's move by 500 us, enqueue times included.
  auto mul0 = events_of(merged, 1, "X", "mul"), mul1 = events_of(merged, 2, "X", "mul");
  ASSERT_EQ(mul0.size(), 1u);
  ASSERT_EQ(mul1.size(), 1u);
  EXPECT_EQ(mul0[0].at("ts").get<double>(), 10.5);
  EXPECT_EQ(mul1[0].at("ts").get<double>(), 510.5);
  EXPECT_EQ(mul1[0].at("dur").get<double>(), 4.5);
  EXPECT_EQ(mul1[0].at("args").at("enqueued_us").get<double>(), 509.25);
  EXPECT_EQ(events_of(merged, 2, "X", "step 1").at(0).at("ts").get<double>(), 510.5);

  // Each process's message arrow stays inside it, re-numbered.
  auto messages = arrows(merged, "message");
  ASSERT_EQ(messages.size(), 2u);
  for (const auto& m : messages) {
    EXPECT_EQ(m.from.at("pid"), m.to.at("pid"));
    double shift = m.from.at("pid") == 1 ? 0 : 500;
    EXPECT_EQ(m.from.at("ts").get<double>(), 15 + shift);
    EXPECT_EQ(m.to.at("ts").get<double>(), 20 + shift);
  }

  // The all_reduce: rank 0's at [20, 50], rank 1's at [520, 550]; each sends to the other
  // from its span's start to the other's span's end.
  auto network = arrows(merged, "network");
  ASSERT_EQ(network.size(), 2u);
  std::set<std::tuple<int, int, double, double>> ends;
  for (const auto& a : network) {
    EXPECT_EQ(a.from.at("tid"), 1);
    EXPECT_EQ(a.to.at("tid"), 1);
    EXPECT_EQ(a.to.at("bp"), "e");
    ends.insert({a.from.at("pid").get<int>(), a.to.at("pid").get<int>(),
                 a.from.at("ts").get<double>(), a.to.at("ts").get<double>()});
  }
  EXPECT_EQ(ends, (std::set<std::tuple<int, int, double, double>>{{1, 2, 20.0, 550.0},
                                                                   {2, 1, 520.0, 50.0}}));
}

TEST(TraceToolMerge, ThreeProcessesStartAtTheEarliestOriginWithAnArrowPerOrderedPair) {
  temp_dir dir("trace_merge_three");
  // On rank 0's clock the traces start at 1.0 ms (rank 0), 1.5 ms (rank 1: its clock is
  // 1.5 ms ahead) and 0.5 ms (rank 2: its clock is 0.3 ms behind), so rank 2's start is the
  // origin and ranks 0 and 1 move by 500 and 1000 us.
  std::vector<std::string> files = {
    write(dir, "t.rank0.json", process_trace(0, 3, 0, 1'000'000, 2)),
    write(dir, "t.rank1.json", process_trace(1, 3, 1'500'000, 3'000'000, 2)),
    write(dir, "t.rank2.json", process_trace(2, 3, -300'000, 200'000, 2))};
  auto r = trace_tool("merge " + files[2] + " " + files[0] + " " + files[1] + " -o " +
                        dir.file("m.json"),
                      dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("12 network arrows"), std::string::npos) << r.out;
  auto merged = json::parse(slurp(dir.file("m.json")));
  EXPECT_EQ(merged.at("otherData").at("origin_ns"), 500'000);
  std::vector<int> ranks;
  for (const auto& m : merged.at("otherData").at("merged"))
    ranks.push_back(m.at("rank").get<int>());
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2}));

  const double shift_us[] = {500, 1000, 0};
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(events_of(merged, rank + 1, "M", "process_name").at(0).at("args").at("name"),
              "rank " + std::to_string(rank));
    EXPECT_EQ(events_of(merged, rank + 1, "X", "mul").at(0).at("ts").get<double>(),
              10.5 + shift_us[rank]) << "rank " << rank;
  }
  EXPECT_EQ(arrows(merged, "message").size(), 3u);

  // Per collective c, p -> q from p's span start (20 + 40c) to q's span end (50 + 40c).
  std::set<std::tuple<int, int, double, double>> expected, drawn;
  for (int c = 0; c < 2; ++c)
    for (int p = 0; p < 3; ++p)
      for (int q = 0; q < 3; ++q)
        if (p != q)
          expected.insert({p + 1, q + 1, 20 + 40 * c + shift_us[p], 50 + 40 * c + shift_us[q]});
  auto network = arrows(merged, "network");
  EXPECT_EQ(network.size(), 12u);
  for (const auto& a : network)
    drawn.insert({a.from.at("pid").get<int>(), a.to.at("pid").get<int>(),
                  a.from.at("ts").get<double>(), a.to.at("ts").get<double>()});
  EXPECT_EQ(drawn, expected);

  // The skew: per collective, rank 2 (shifted least) arrives first and rank 1 (shifted most)
  // 1 ms later; a span of that length on the "collective skew" process after the ranks.
  EXPECT_NE(r.out.find("the arrival skew of 2 collectives"), std::string::npos) << r.out;
  EXPECT_EQ(events_of(merged, 4, "M", "process_name").at(0).at("args").at("name"), "collective skew");
  const auto skew = events_of(merged, 4, "X", "rank 1 1.000 ms late");
  ASSERT_EQ(skew.size(), 2u);
  for (int c = 0; c < 2; ++c) {
    const auto& span = skew.at(static_cast<std::size_t>(c));
    EXPECT_EQ(span.at("cat"), "skew");
    EXPECT_EQ(span.at("ts").get<double>(), 20 + 40 * c + shift_us[2]);
    EXPECT_EQ(span.at("dur").get<double>(), shift_us[1] - shift_us[2]);
    EXPECT_EQ(span.at("args").at("collective").get<int>(), c);
    EXPECT_EQ(span.at("args").at("first_rank").get<int>(), 2);
    EXPECT_EQ(span.at("args").at("latest_rank").get<int>(), 1);
    EXPECT_EQ(span.at("args").at("late_us").get<double>(), 1000);
  }
  EXPECT_TRUE(merged.at("otherData").contains("skew"));
}

TEST(TraceToolMerge, OverEightProcessesLeavesTheNetworkArrowsOutAndSaysSo) {
  temp_dir dir("trace_merge_nine");
  std::string inputs;
  for (int rank = 0; rank < 9; ++rank)
    inputs += " " + write(dir, "t.rank" + std::to_string(rank) + ".json",
                          process_trace(rank, 9, 1000 * rank, 1'000'000));
  auto r = trace_tool("merge -o " + dir.file("m.json") + inputs, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("no network arrows (more than 8 processes)"), std::string::npos) << r.out;
  auto merged = json::parse(slurp(dir.file("m.json")));
  EXPECT_TRUE(arrows(merged, "network").empty());
  EXPECT_EQ(arrows(merged, "message").size(), 9u);
  EXPECT_TRUE(merged.at("otherData").at("network_arrows").get<std::string>().starts_with(
    "left out: 9 processes"));
}

TEST(TraceToolMerge, RejectsInputsThatAreNotOneWholeJobWithStatusTwo) {
  temp_dir dir("trace_merge_rejects");
  auto rank0 = write(dir, "rank0.json", process_trace(0, 2, 0, 1000));
  auto rank1 = write(dir, "rank1.json", process_trace(1, 2, 0, 1000));
  auto other_rank0 = write(dir, "other_rank0.json", process_trace(0, 2, 0, 1000));
  auto of_three = write(dir, "of_three.json", process_trace(1, 3, 0, 1000));
  auto rank0_of_three = write(dir, "rank0_of_three.json", process_trace(0, 3, 0, 1000));
  auto rank2_of_three = write(dir, "rank2_of_three.json", process_trace(2, 3, 0, 1000));
  json old = process_trace(0, 2, 0, 1000);
  old["otherData"].erase("process");
  auto no_process = write(dir, "old.json", old);
  auto foreign = write(dir, "foreign.json", json{{"traceEvents", json::array()},
                                                  {"otherData", {{"tool", "other"}}}});
  std::ofstream(dir.file("garbage.json")) << "not json";
  json no_phase = process_trace(1, 2, 0, 1000);
  no_phase["traceEvents"][1].erase("ph");
  auto bad_event = write(dir, "bad_event.json", no_phase);
  json twice = process_trace(1, 2, 0, 1000);
  twice["traceEvents"].push_back(twice["traceEvents"][5]); // the all_reduce
  auto two_spans = write(dir, "two_spans.json", twice);
  ASSERT_EQ(trace_tool("merge -o " + dir.file("merged.json") + " " + rank0 + " " + rank1, dir)
              .status,
            0);
  auto out = dir.file("out.json");
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
         {"merge -o " + out, "expected the traces of at least 2 processes, got 0"},
         {"merge -o " + out + " " + rank0, "expected the traces of at least 2 processes, got 1"},
         {"merge " + rank0 + " " + rank1, "merge: expected -o OUT.json"},
         {"merge -o " + out + " " + rank0 + " " + foreign, foreign + ": not a pe-actor trace"},
         {"merge -o " + out + " " + rank0 + " " + dir.file("garbage.json"),
          dir.file("garbage.json") + ": not a pe-actor trace: [json.exception.parse_error"},
         {"merge -o " + out + " " + rank0 + " " + dir.file("missing.json"),
          dir.file("missing.json") + ": cannot open the file"},
         {"merge -o " + out + " " + rank0 + " " + bad_event,
          bad_event + ": not a pe-actor trace: [json.exception"},
         {"merge -o " + out + " " + rank0 + " " + two_spans,
          two_spans + ": collective 0 of step 1 has two spans"},
         {"merge -o " + out + " " + no_process + " " + rank1,
          no_process + ": the trace has no otherData.process"},
         {"merge -o " + out + " " + rank0 + " " + dir.file("merged.json"),
          dir.file("merged.json") + ": already a merged trace"},
         {"merge -o " + out + " " + rank0 + " " + other_rank0 + " " + rank1,
          rank0 + " and " + other_rank0 + " are both rank 0"},
         {"merge -o " + out + " " + rank0 + " " + of_three,
          rank0 + " is rank 0 of 2 processes, " + of_three +
            " rank 1 of 3: traces of different jobs"},
         {"merge -o " + out + " " + rank2_of_three + " " + rank0_of_three,
          "rank 1 is missing (the job has 3 processes; the traces hold ranks 0, 2)"}}) {
    auto r = trace_tool(args, dir);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_TRUE(r.err.starts_with("pe-actor-trace: error: ")) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << args << " wrote the output";
  }
}

TEST(TraceToolMerge, SummarizeAndTimelineRefuseAMergedTraceNamingWhatToRead) {
  temp_dir dir("trace_merge_refused");
  auto rank0 = write(dir, "t.rank0.json", process_trace(0, 2, 0, 1000));
  auto rank1 = write(dir, "t.rank1.json", process_trace(1, 2, 0, 1000));
  auto merged = dir.file("m.json");
  ASSERT_EQ(trace_tool("merge -o " + merged + " " + rank0 + " " + rank1, dir).status, 0);
  for (const std::string command : {"summarize", "timeline"}) {
    auto svg = command == "timeline" ? " -o " + dir.file("m.svg") : "";
    auto r = trace_tool(command + " " + merged + svg, dir);
    EXPECT_EQ(r.status, 2) << command;
    EXPECT_NE(r.err.find(merged + ": a trace that pe-actor-trace merge wrote; " + command +
                         " reads one process's trace (such as t.rank0.json)"),
              std::string::npos) << r.err;
  }
  auto one = trace_tool("summarize " + rank1, dir);
  EXPECT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find("1 step (1..1) on cpu:0"), std::string::npos) << one.out;
}

TEST(TraceToolCli, HelpDescribesMerge) {
  temp_dir dir("trace_tool_merge_help");
  auto all = trace_tool("--help", dir);
  EXPECT_EQ(all.status, 0);
  EXPECT_NE(all.out.find("merge -o OUT.json IN.json..."), std::string::npos) << all.out;
  auto merge = trace_tool("merge --help", dir);
  EXPECT_EQ(merge.status, 0);
  for (const char* text : {"--output", "rank 0's clock", "half a round trip", "up to 8 processes"})
    EXPECT_NE(merge.out.find(text), std::string::npos) << text << " in\n" << merge.out;
}

TEST(TraceToolMerge, MergesTheTracesOfTwoRealProcesses) {
  temp_dir dir("trace_merge_real");
  const std::string master = "127.0.0.1:" + std::to_string(testing::free_port());
  // Both ranks at once, each bounded in time (timeout kills it, so none is left behind).
  std::vector<run_result> ranks(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    std::filesystem::create_directories(dir.path() / std::to_string(rank));
    threads.emplace_back([&, rank] {
      ranks[rank] = testing::run_binary(
        std::string("timeout -k 5 120 ") + pe::testing::pe_actor_run_binary(),
        "--places cpu:1 --steps 3 --trace " + dir.file("t.json") + " --nnodes 2 --node-rank " +
          std::to_string(rank) + " --master " + master,
        dir.path() / std::to_string(rank));
    });
  }
  for (auto& t : threads)
    t.join();
  for (int rank = 0; rank < 2; ++rank)
    ASSERT_EQ(ranks[rank].status, 0) << "rank " << rank << ": " << ranks[rank].err;

  auto merged_path = dir.file("m.json");
  auto r = trace_tool("merge -o " + merged_path + " " + dir.file("t.rank0.json") + " " +
                        dir.file("t.rank1.json"),
                      dir);
  ASSERT_EQ(r.status, 0) << r.err;
  auto merged = json::parse(slurp(merged_path));
  std::int64_t origin_ns = merged.at("otherData").at("origin_ns");
  std::size_t collectives = 0;
  for (int rank = 0; rank < 2; ++rank) {
    auto input = json::parse(slurp(dir.file("t.rank" + std::to_string(rank) + ".json")));
    const json& process = input.at("otherData").at("process");
    EXPECT_EQ(process.at("rank"), rank);
    EXPECT_EQ(process.at("processes"), 2);
    EXPECT_EQ(merged.at("otherData").at("merged")[rank].at("clock_offset_ns"),
              process.at("clock_offset_ns"));
    std::int64_t shift_ns = process.at("origin_ns").get<std::int64_t>() -
                            process.at("clock_offset_ns").get<std::int64_t>() - origin_ns;
    EXPECT_GE(shift_ns, 0);
    // The spans, in order, each moved by the process's shift.
    std::vector<json> before, after = events_of(merged, rank + 1, "X");
    for (const auto& e : input.at("traceEvents"))
      if (e.at("ph") == "X")
        before.push_back(e);
    ASSERT_EQ(before.size(), after.size()) << "rank " << rank;
    ASSERT_FALSE(before.empty());
    for (std::size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(after[i].at("name"), before[i].at("name"));
      EXPECT_NEAR(after[i].at("ts").get<double>(),
                  before[i].at("ts").get<double>() + static_cast<double>(shift_ns) / 1000, 1e-3);
      collectives += rank == 0 && before[i].at("cat") == "collective";
    }
  }
  EXPECT_GT(collectives, 0u);
  auto network = arrows(merged, "network");
  EXPECT_EQ(network.size(), 2 * collectives) << "both directions of every collective";
  for (const auto& a : network)
    EXPECT_NE(a.from.at("pid"), a.to.at("pid"));
  EXPECT_FALSE(arrows(merged, "message").empty());
}

} // namespace
} // namespace pe

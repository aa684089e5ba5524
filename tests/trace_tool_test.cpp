// pe-actor-trace end to end, on a trace the real pe-actor-run records and on hand-made ones:
// the trace file's content, summarize's report, timeline's SVG and the tool's errors.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "idx_files.hpp"
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
    auto r = run(PE_RUN_BINARY,
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

} // namespace
} // namespace pe

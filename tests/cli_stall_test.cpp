// pe-actor-run's stall flags and SIGUSR1: --stall-timeout and --on-stall parsed, checked and
// shown in --help and the metrics' config; SIGUSR1 prints a report of the running step on
// stderr (and into the metrics and the trace) without disturbing training; across processes,
// a stall report names the process whose data a collective waits for.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "idx_files.hpp"
#include "tests/support/child_run.hpp"
#include "tests/support/job.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::child_run;
using testing::run_binary;
using testing::slurp;
using testing::temp_dir;

constexpr auto patience = std::chrono::seconds(60);

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CliStall, HelpDescribesTheFlagsAndTheDefault) {
  temp_dir dir("cli_stall_help");
  const auto r = run_binary(testing::pe_actor_run_binary(), "--help", dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "--stall-timeout SECONDS (=300)")) << r.out;
  EXPECT_TRUE(has(r.out, "--on-stall ACTION (=fail)")) << r.out;
  EXPECT_TRUE(has(r.out, "SIGUSR1")) << r.out;
}

TEST(CliStall, BadValuesAreRefused) {
  temp_dir dir("cli_stall_bad");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--stall-timeout -1", "--stall-timeout must be 0 (off) or a positive number of seconds"},
      {"--stall-timeout nan", "--stall-timeout must be 0 (off) or a positive number of seconds"},
      {"--on-stall maybe", "--on-stall: expected fail or report, got 'maybe'"},
      {"--executor reference --stall-timeout 5", "--stall-timeout, --on-stall, --cuda-graphs, --sync-batch-norm, --pin-places, --actor-per-op and --no-overlap-steps configure the actor executor"},
      {"--executor reference --on-stall report", "--stall-timeout, --on-stall, --cuda-graphs, --sync-batch-norm, --pin-places, --actor-per-op and --no-overlap-steps configure the actor executor"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_binary(testing::pe_actor_run_binary(), args, dir.path());
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_TRUE(has(r.err, message)) << args << ": " << r.err;
    EXPECT_TRUE(has(r.err, "pe-actor-run: error: ")) << args << ": " << r.err;
  }
}

TEST(CliStall, TheFlagsReachTheMetricsConfig) {
  temp_dir dir("cli_stall_config");
  const auto r = run_binary(testing::pe_actor_run_binary(),
                            "--steps 2 --hidden 8 --stall-timeout 12.5 --on-stall report --metrics " +
                                dir.file("m.json"),
                            dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto metrics = nlohmann::json::parse(slurp(dir.file("m.json")));
  EXPECT_EQ(metrics.at("config").at("stall_timeout"), 12.5);
  EXPECT_EQ(metrics.at("config").at("on_stall"), "report");
  EXPECT_FALSE(metrics.contains("stall_reports")); // a healthy run makes none
  EXPECT_FALSE(has(r.err, "stall report")) << r.err;
}

TEST(CliStall, Sigusr1PrintsAReportAndTrainingGoesOn) {
  temp_dir dir("cli_stall_usr1");
  const std::string steps = "1000000"; // far more than the test waits for
  child_run child({"--places", "cpu:2", "--hidden", "8", "--batch-size", "16", "--steps", steps,
                   "--metrics", dir.file("m.json"), "--trace", dir.file("t.json"), "--trace-steps", "1:1000000"});
  ASSERT_TRUE(child.wait_for("step 1/" + steps, patience)) << child.output();
  child.send(SIGUSR1);
  ASSERT_TRUE(child.wait_for("furthest wait: ", patience)) << child.output();
  // The report names the running step, its unfinished ops and the streams' queues.
  const std::string& out = child.output();
  EXPECT_TRUE(has(out, "pe-actor-run: progress report: step ")) << out;
  EXPECT_TRUE(has(out, "ops not finished:")) << out;
  EXPECT_TRUE(has(out, "cpu:1 compute: ")) << out;
  // Still training: SIGINT ends it at a step boundary, as it would have without the report.
  child.send(SIGINT);
  const auto status = child.wait_exit(patience);
  ASSERT_TRUE(status) << child.output();
  ASSERT_TRUE(WIFEXITED(*status)) << child.output();
  EXPECT_EQ(WEXITSTATUS(*status), 130) << child.output();
  EXPECT_FALSE(has(child.output(), "pe-actor-run: error")) << child.output();

  const auto metrics = nlohmann::json::parse(slurp(dir.file("m.json")));
  ASSERT_TRUE(metrics.contains("stall_reports")) << metrics.dump();
  const auto& report = metrics.at("stall_reports").at(0);
  EXPECT_EQ(report.at("on_demand"), true);
  EXPECT_GE(report.at("step").get<std::int64_t>(), 1);
  EXPECT_FALSE(report.at("root_cause").get<std::string>().empty());
  const auto trace = nlohmann::json::parse(slurp(dir.file("t.json")));
  int instants = 0;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "i" && e.at("cat") == "stall") {
      ++instants;
      EXPECT_TRUE(has(e.at("args").at("report").get<std::string>(), "progress report: step ")) << e.dump();
    }
  EXPECT_EQ(instants, 1);
}

TEST(CliStall, AStalledCollectiveAcrossProcessesNamesTheProcessItWaitsFor) {
  // Rank 1 is stopped (SIGSTOP) for longer than the stall timeout and shorter than the peer
  // timeout: rank 0's step stalls in a collective whose network stage lacks rank 1's data,
  // and its report says so; in report mode it keeps waiting, and the job ends well. 4000
  // steps: over shared memory (the default backend) 400 took under a second, and a loaded
  // machine noticed step 50 only after the last.
  temp_dir dir("cli_stall_processes");
  testing::job j(dir, 2, {"--model", "mlp", "--hidden", "16", "--places", "cpu:1", "--steps", "4000",
                          "--log-every", "25", "--stall-timeout", "0.5", "--on-stall", "report",
                          "--peer-timeout", "30"});
  ASSERT_TRUE(j.ranks[0]->printed("step 50/", patience)) << j.errors();
  // A stop that lands while rank 0 gathers the step's fetched rows from rank 1 (a host
  // exchange after the step) gets that gather's report instead (the next test): this one
  // wants the collective's, so such a stop is let go and another tried, up to 8 times.
  const auto reported = [&] { return has(j.ranks[0]->err(), "waits for the data of process rank 1 ("); };
  for (int attempt = 0; attempt < 8 && !reported(); ++attempt) {
    ::kill(j.ranks[1]->pid(), SIGSTOP);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    while (!reported() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::kill(j.ranks[1]->pid(), SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const std::string report = j.ranks[0]->err();
  EXPECT_TRUE(has(report, "waits for the data of process rank 1")) << report;
  EXPECT_TRUE(has(report, "it waits for the data of process rank 1 (stopped, slow, or stuck")) << report;
  const auto status = j.wait();
  EXPECT_EQ(status, (std::vector<std::optional<int>>{0, 0})) << j.errors();
}

TEST(CliStall, AStoppedProcessGetsAReportWhereverTheStopLands) {
  // One stop of rank 1, wherever it lands: in a collective of the step or in the gather of
  // fetched values after it (a host exchange, watched too), rank 0 reports within the stop.
  temp_dir dir("cli_stall_anywhere");
  testing::job j(dir, 2, {"--model", "mlp", "--hidden", "16", "--places", "cpu:1", "--steps", "4000",
                          "--log-every", "25", "--stall-timeout", "0.5", "--on-stall", "report",
                          "--peer-timeout", "30"});
  ASSERT_TRUE(j.ranks[0]->printed("step 50/", patience)) << j.errors();
  const auto reported = [&] { return has(j.ranks[0]->err(), "stall report: step "); };
  ::kill(j.ranks[1]->pid(), SIGSTOP);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!reported() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(j.ranks[1]->pid(), SIGCONT);
  const std::string report = j.ranks[0]->err();
  EXPECT_TRUE(reported()) << report;
  EXPECT_TRUE(has(report, "waits for the data of process rank 1") ||
              has(report, "gather of fetched values (a host exchange after the step) waits for process rank 1"))
      << report;
  const auto status = j.wait();
  EXPECT_EQ(status, (std::vector<std::optional<int>>{0, 0})) << j.errors();
}

TEST(CliStall, RankZeroGathersTheJobsStallReports) {
  // Of 3 processes, rank 2 is stopped: ranks 0 and 1 both stall waiting for it (in a
  // collective that lacks its data, or in the gather of fetched values after the step). Rank 1 sends its report to rank 0, which prints the job's reports under one
  // heading: its own root cause, rank 1's (with its whole report), and rank 2 named as
  // sending none.
  temp_dir dir("cli_stall_gather");
  testing::job j(dir, 3, {"--model", "mlp", "--hidden", "16", "--places", "cpu:1", "--steps", "4000",
                          "--log-every", "25", "--stall-timeout", "0.5", "--on-stall", "report",
                          "--peer-timeout", "30"});
  ASSERT_TRUE(j.ranks[0]->printed("step 50/", patience)) << j.errors();
  // Only what the ranks print after rank 2 stops counts: on a loaded machine a slow first
  // step (0.63 s for one mul beside two busy loops) is a stall of every rank, rank 2's too.
  std::size_t from0 = 0, from1 = 0;
  const auto report = [&] { return j.ranks[0]->err().substr(std::min(from0, j.ranks[0]->err().size())); };
  const auto gathered = [&] {
    const std::string err = report();
    return has(err, "the job's stall reports, gathered by rank 0:") && has(err, "  rank 1 (step ");
  };
  for (int attempt = 0; attempt < 8; ++attempt) {
    from0 = j.ranks[0]->err().size();
    from1 = j.ranks[1]->err().size();
    ::kill(j.ranks[2]->pid(), SIGSTOP);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(6);
    while (!gathered() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const bool done = gathered();
    ::kill(j.ranks[2]->pid(), SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (done) break;
  }
  const std::string gathered_report = report();
  EXPECT_TRUE(has(gathered_report, "the job's stall reports, gathered by rank 0:\n  rank 0 (step ")) << gathered_report;
  EXPECT_TRUE(has(gathered_report, "  rank 2: no report within 1.0 s")) << gathered_report;
  EXPECT_TRUE(has(gathered_report, "pe-actor-run: rank 1's report: ")) << gathered_report;
  // Rank 1's root cause, as rank 0 prints it, is rank 1's own: it waited for rank 2 too.
  const auto line = gathered_report.find("  rank 1 (step ");
  ASSERT_NE(line, std::string::npos) << gathered_report;
  EXPECT_TRUE(has(gathered_report.substr(line, gathered_report.find('\n', line) - line), "process rank 2")) << gathered_report;
  // Rank 1 printed its own report as well, and was not gathering (only rank 0 does).
  // (In a collective of the step, or in the gather of fetched values after it.)
  const std::string rank1 = j.ranks[1]->err().substr(from1);
  EXPECT_TRUE(has(rank1, "waits for the data of process rank 2") || has(rank1, "waits for process rank 2 (stopped"))
      << rank1;
  EXPECT_FALSE(has(j.ranks[1]->err(), "gathered by rank 0")) << j.ranks[1]->err();
  const auto status = j.wait();
  EXPECT_EQ(status, (std::vector<std::optional<int>>{0, 0, 0})) << j.errors();
}

} // namespace
} // namespace pe

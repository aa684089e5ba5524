// pe-actor-trace stragglers: per process, how late it came to the collectives of a job
// (median, p95, max after the earliest process) and the latest arrivals; on a hand-made
// merged trace with known arrivals, and on a real 2-process job whose rank 1 is stopped for
// half a second mid-training (a straggler, not a stall: the job trains on).
#include <chrono>
#include <csignal>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "apps/trace/trace_stragglers.hpp"
#include "idx_files.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/job.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::contains;

/// A collective span of rank `rank` arriving at `ts` (us).
json collective(int rank, std::uint64_t step, int position, double ts) {
  return {{"ph", "X"}, {"cat", "collective"}, {"name", "all_reduce"}, {"pid", rank + 1}, {"tid", 2},
          {"ts", ts}, {"dur", 10.0},
          {"args", {{"step", step}, {"collective", position}, {"label", "all_reduce(w" + std::to_string(position) + "@GRAD)"}}}};
}

json document(const json& events) {
  return {{"traceEvents", events}, {"otherData", {{"tool", "pe-actor"}}}};
}

TEST(TraceStragglers, KnownArrivalsGiveKnownLateness) {
  json events = json::array();
  const double rank1_late[] = {0, 10, 20, 1000};
  for (int c = 0; c < 4; ++c) {
    events.push_back(collective(0, 1, c, 100.0 * c));
    events.push_back(collective(1, 1, c, 100.0 * c + rank1_late[c]));
  }
  events.push_back(collective(0, 2, 0, 900)); // rank 1 did not trace it: left out
  events.push_back({{"ph", "X"}, {"cat", "computation"}, {"name", "mul"}, {"pid", 2}, {"ts", 0.0}, {"args", json::object()}});
  const auto r = find_stragglers(document(events), 2);
  EXPECT_EQ(r.processes, 2);
  EXPECT_EQ(r.collectives, 4u);
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(r.ranks[0].max_us, 0);
  EXPECT_DOUBLE_EQ(r.ranks[1].median_us, 10); // nearest rank of {0, 10, 20, 1000}
  EXPECT_DOUBLE_EQ(r.ranks[1].p95_us, 1000);
  EXPECT_DOUBLE_EQ(r.ranks[1].max_us, 1000);
  EXPECT_EQ(r.ranks[1].last, 4u); // ties go to the later rank
  ASSERT_EQ(r.latest.size(), 2u);
  EXPECT_EQ(r.latest[0].label, "all_reduce(w3@GRAD)");
  EXPECT_EQ(r.latest[0].rank, 1);
  EXPECT_DOUBLE_EQ(r.latest[0].late_us, 1000);
  std::ostringstream printed;
  print_stragglers(r, printed);
  EXPECT_TRUE(contains(printed.str(), "step 1 collective #3 all_reduce(w3@GRAD): rank 1 came 1.000 ms after rank 0"))
      << printed.str();
}

TEST(TraceStragglers, OneProcessHasNothingToCompareAndAStrangerFileIsRefused) {
  json events = json::array({collective(0, 1, 0, 0), collective(0, 1, 1, 5)});
  const auto r = find_stragglers(document(events));
  EXPECT_EQ(r.processes, 1);
  std::ostringstream printed;
  print_stragglers(r, printed);
  EXPECT_TRUE(contains(printed.str(), "nothing to compare")) << printed.str();
  testing::expect_error([] { find_stragglers(json{{"traceEvents", json::array()}, {"otherData", {{"tool", "x"}}}}); },
                        {"not a pe-actor trace"});
}

TEST(TraceStragglers, AStoppedProcessIsTheStragglerOfARealJob) {
  testing::temp_dir dir("trace_stragglers_job");
  // 3000 steps, the first 1500 traced: the stops below must land while the job still
  // trains, however late this test sees a step's line (it polls every 50 ms; at ~0.1 ms a
  // step, 400 steps in all were sometimes over before the last stop).
  testing::job j(dir, 2, {"--model", "mlp", "--hidden", "16", "--places", "cpu:1", "--steps", "3000",
                          "--log-every", "25", "--trace", dir.file("t.json"), "--trace-steps", "1:1500"});
  // Rank 1 stopped for 300 ms six times. A stop that lands while rank 0 gathers the step's
  // fetched rows (a host exchange after the step, not a collective) shows at no collective;
  // one that lands after rank 1 sent its fetched rows but before its network thread put them
  // on the wire, while its next step's collectives are already launched, makes rank 0 the
  // late one at that step (it waits for those rows). Each of the six has roughly an even
  // chance of showing as rank 1's lateness (three stops missed in about one run of ten), so
  // the six latest arrivals are looked at for one of them.
  for (const char* step : {"step 50/", "step 100/", "step 150/", "step 200/", "step 250/", "step 300/"}) {
    ASSERT_TRUE(j.ranks[0]->printed(step, 60s)) << j.errors();
    ::kill(j.ranks[1]->pid(), SIGSTOP);
    std::this_thread::sleep_for(300ms);
    ::kill(j.ranks[1]->pid(), SIGCONT);
  }
  const auto status = j.wait();
  ASSERT_EQ(status, (std::vector<std::optional<int>>{0, 0})) << j.errors();
  const auto merged = testing::run_binary(PE_TRACE_BINARY, "merge -o " + dir.file("m.json") + " " +
                                              dir.file("t.rank0.json") + " " + dir.file("t.rank1.json"), dir.path());
  ASSERT_EQ(merged.status, 0) << merged.err;
  const auto r = testing::run_binary(PE_TRACE_BINARY, "stragglers " + dir.file("m.json") + " --top 6", dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  std::cout << r.out; // what README quotes
  // Rank 1 came to one collective ~300 ms after rank 0, who waited there.
  const auto arrivals = r.out.substr(r.out.find("latest arrivals:"));
  const auto at = arrivals.find(": rank 1 came ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double late_ms = std::stod(arrivals.substr(at + std::string(": rank 1 came ").size()));
  EXPECT_GT(late_ms, 200) << r.out;
  EXPECT_LT(late_ms, 5000) << r.out;
}

} // namespace
} // namespace pe

// pe-actor-run --sparse-exchange auto|sparse|dense on the real binary: Paddle's bag-of-words
// program with a sparse embedding (tests/data/paddle_bow_adam_lazy) on 2 places trains to
// the same losses within 1e-6 whichever exchange runs, the metrics' config and the trace name
// the one that ran, and a bad value or the reference executor is refused.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::run_result;
using testing::slurp;
using testing::temp_dir;

const std::string fixture = std::string(PE_TEST_DATA_DIR) + "/paddle_bow_adam_lazy";

/// pe-actor-run on the fixture, 2 places, 8 steps of its one batch, with `extra` flags.
run_result run_bow(const std::string& extra, const temp_dir& dir) {
  const std::string args = "--model " + fixture + "/main.pb --startup " + fixture + "/startup.pb --data npy:" +
                           fixture + " --load-params " + fixture + "/params --batch-size 8 --steps 8 --no-shuffle " +
                           "--places cpu:2 " + extra;
  return testing::run_binary(testing::pe_actor_run_binary(), args, dir.path());
}

struct trained {
  std::vector<double> losses;
  nlohmann::json config;
  std::string trace;
};

trained train(const std::string& mode, const temp_dir& dir) {
  const std::string metrics = dir.file(mode + ".json"), trace = dir.file(mode + "-trace.json");
  const run_result r = run_bow("--sparse-exchange " + mode + " --metrics " + metrics + " --trace " + trace, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  trained t;
  const auto m = nlohmann::json::parse(slurp(metrics));
  for (const auto& step : m.at("steps")) t.losses.push_back(step.at("loss").get<double>());
  t.config = m.at("config");
  t.trace = slurp(trace);
  return t;
}

TEST(CliSparseExchange, EveryModeTrainsToTheSameLossesAndTheTraceNamesWhatRan) {
  temp_dir dir("cli_sparse_exchange");
  const trained sparse = train("sparse", dir), dense = train("dense", dir), automatic = train("auto", dir);
  ASSERT_EQ(sparse.losses.size(), 8u);
  ASSERT_EQ(dense.losses.size(), 8u);
  for (std::size_t s = 0; s < 8; ++s) {
    EXPECT_NEAR(dense.losses[s], sparse.losses[s], 1e-6) << "step " << s + 1;
    EXPECT_EQ(automatic.losses[s], dense.losses[s]) << "auto takes the dense path on this table, step " << s + 1;
  }
  EXPECT_LT(sparse.losses.back(), sparse.losses.front());
  EXPECT_EQ(sparse.config.at("sparse_exchange"), "sparse");
  EXPECT_EQ(automatic.config.at("sparse_exchange"), "auto");
  EXPECT_NE(sparse.trace.find("\"all_gather(embedding_0.w_0@GRAD)\""), std::string::npos);
  EXPECT_EQ(sparse.trace.find("dense fallback"), std::string::npos);
  EXPECT_NE(dense.trace.find("all_reduce(embedding_0.w_0@GRAD) (dense fallback of all_gather)"), std::string::npos);
  EXPECT_NE(automatic.trace.find("all_reduce (dense fallback)"), std::string::npos);
}

TEST(CliSparseExchange, HelpDescribesItAndBadUsesAreRefused) {
  temp_dir dir("cli_sparse_exchange_bad");
  const run_result help = testing::run_binary(testing::pe_actor_run_binary(), "--help", dir.path());
  for (const char* fact : {"--sparse-exchange", "auto", "all_reduce (dense fallback)", "height x (width + 1) x 4"})
    EXPECT_NE(help.out.find(fact), std::string::npos) << fact;
  run_result r = run_bow("--sparse-exchange gather", dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--sparse-exchange: expected auto, sparse or dense, got 'gather'"), std::string::npos) << r.err;
  r = testing::run_binary(testing::pe_actor_run_binary(), "--executor reference --sparse-exchange dense --steps 1",
                          dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--sparse-exchange"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("configure the actor executor"), std::string::npos) << r.err;
}

} // namespace
} // namespace pe

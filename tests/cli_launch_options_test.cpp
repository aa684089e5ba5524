// pe-actor-run's multi-process flags (--nnodes, --node-rank, --master, --peer-timeout) and
// Paddle's launch environment, parsed directly: no process is started.
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/run/launch_options.hpp"
#include "apps/run/options.hpp"
#include "collectives/process_backend.hpp"
#include "tests/support/expect_error.hpp"

namespace pe {
namespace {

using testing::expect_error;

/// The variables parse_options reads from the environment.
const char* const launch_variables[] = {"PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ID",
                                        "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT",
                                        "CPU_NUM"};

/// Clears the launch variables for a test and sets the ones it asks for; restores the
/// caller's environment afterwards.
class LaunchOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : launch_variables) {
      if (const char* value = std::getenv(name))
        saved_[name] = value;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : launch_variables) {
      ::unsetenv(name);
      if (auto it = saved_.find(name); it != saved_.end())
        ::setenv(name, it->second.c_str(), 1);
    }
  }

  static void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

  /// parse_options on "pe-actor-run <args>" (words split on spaces).
  static run_options parse(const std::string& args) {
    std::vector<std::string> words{"pe-actor-run"};
    std::istringstream in(args);
    for (std::string word; in >> word;)
      words.push_back(word);
    std::vector<const char*> argv;
    for (const auto& w : words)
      argv.push_back(w.c_str());
    std::ostringstream help;
    auto options = parse_options(static_cast<int>(argv.size()), argv.data(), help);
    if (!options)
      throw std::logic_error("unexpected --help");
    return *options;
  }

  static void expect_rejected(const std::string& args, const std::vector<std::string>& parts) {
    expect_error([&] { parse(args); }, parts);
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(LaunchOptions, OneProcessByDefault) {
  const auto o = parse("");
  EXPECT_EQ(o.nnodes, 1);
  EXPECT_EQ(o.node_rank, 0);
  EXPECT_TRUE(o.master_host.empty());
  EXPECT_EQ(o.peer_timeout, 10);
  EXPECT_FALSE(o.multi_process());
  EXPECT_FALSE(to_json(o).contains("nnodes"));
}

TEST_F(LaunchOptions, FlagsPlaceTheProcess) {
  const auto o = parse("--nnodes 3 --node-rank 2 --master 10.0.0.1:29500 --peer-timeout 2.5");
  EXPECT_EQ(o.nnodes, 3);
  EXPECT_EQ(o.node_rank, 2);
  EXPECT_EQ(o.master_host, "10.0.0.1");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_EQ(o.peer_timeout, 2.5);
  EXPECT_EQ(o.collective_backend, "auto");
  EXPECT_TRUE(o.multi_process());
  const auto config = to_json(o);
  EXPECT_EQ(config.at("collective_backend"), "auto");
  EXPECT_EQ(config.at("nnodes"), 3);
  EXPECT_EQ(config.at("node_rank"), 2);
  EXPECT_EQ(config.at("master"), "10.0.0.1:29500");
  EXPECT_EQ(config.at("peer_timeout"), 2.5);
}

TEST_F(LaunchOptions, BracketedIpv6Master) {
  const auto o = parse("--nnodes 2 --master [::1]:7000");
  EXPECT_EQ(o.master_host, "::1");
  EXPECT_EQ(o.master_port, 7000);
  EXPECT_EQ(to_json(o).at("master"), "[::1]:7000");
}

TEST_F(LaunchOptions, PaddlesEnvironmentStandsInForTheFlags) {
  set("PADDLE_TRAINERS_NUM", "2");
  set("PADDLE_TRAINER_ID", "1");
  set("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6170,127.0.0.1:6171");
  set("PADDLE_CURRENT_ENDPOINT", "127.0.0.1:6171");
  const auto o = parse("");
  EXPECT_EQ(o.nnodes, 2);
  EXPECT_EQ(o.node_rank, 1);
  EXPECT_EQ(o.master_host, "127.0.0.1"); // the first endpoint is the master's
  EXPECT_EQ(o.master_port, 6170);
  // Flags that agree with it are accepted.
  const auto same = parse("--nnodes 2 --node-rank 1 --master 127.0.0.1:6170");
  EXPECT_EQ(same.node_rank, 1);
}

TEST_F(LaunchOptions, EndpointsAloneGiveTheProcessCount) {
  set("PADDLE_TRAINER_ENDPOINTS", "a:1,b:2,c:3");
  set("PADDLE_TRAINER_ID", "2");
  const auto o = parse("");
  EXPECT_EQ(o.nnodes, 3);
  EXPECT_EQ(o.node_rank, 2);
  EXPECT_EQ(o.master_host, "a");
  EXPECT_EQ(o.master_port, 1);
}

TEST_F(LaunchOptions, RejectsBadFlags) {
  expect_rejected("--nnodes 0", {"--nnodes must be positive, got 0"});
  expect_rejected("--nnodes 2 --node-rank -1 --master h:1", {"--node-rank must be 0 or more"});
  expect_rejected("--nnodes 2 --node-rank 2 --master h:1",
                  {"--node-rank 2 is out of range", "(--nnodes 2)", "ranks 0..1"});
  expect_rejected("--node-rank 1", {"--node-rank 1 is out of range", "no --nnodes"});
  expect_rejected("--nnodes 2", {"--nnodes 2 needs --master HOST:PORT"});
  expect_rejected("--nnodes 2 --master localhost", {"--master", "expected HOST:PORT", "'localhost'"});
  expect_rejected("--nnodes 2 --master :29500", {"--master", "expected HOST:PORT"});
  expect_rejected("--nnodes 2 --master host:", {"--master", "expected HOST:PORT"});
  expect_rejected("--nnodes 2 --master ::1:80", {"--master", "in brackets"});
  expect_rejected("--nnodes 2 --master h:0", {"--master h:0: the port must be 1..65535, got '0'"});
  expect_rejected("--nnodes 2 --master h:65536", {"the port must be 1..65535, got '65536'"});
  expect_rejected("--nnodes 2 --master h:http", {"the port must be 1..65535, got 'http'"});
  expect_rejected("--peer-timeout 0", {"--peer-timeout must be a positive number of seconds"});
  expect_rejected("--peer-timeout -3", {"--peer-timeout must be a positive"});
  expect_rejected("--collective-backend mpi",
                  {"--collective-backend: no collective backend 'mpi' in this build (it has auto or caf"});
}

TEST_F(LaunchOptions, CollectiveBackendsByName) {
  bool gloo = false;
  for (const auto& b : process_backends()) gloo = gloo || b.name == "gloo";
  if (!gloo) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
  EXPECT_EQ(parse("--nnodes 2 --master h:1 --collective-backend gloo").collective_backend, "gloo");
}

TEST_F(LaunchOptions, SeveralProcessesNeedTheActorExecutorAndTraining) {
  expect_rejected("--nnodes 2 --master h:1 --executor reference",
                  {"--executor reference runs in one process", "--nnodes 2"});
  expect_rejected("--nnodes 2 --master h:1 --infer --model m.pdmodel --params p --output o "
                  "--data npy:d",
                  {"--infer runs in one process"});
  // One process of them is still fine with either.
  EXPECT_EQ(parse("--nnodes 1 --executor reference").nnodes, 1);
}

TEST_F(LaunchOptions, RejectsABadOrDisagreeingEnvironment) {
  set("PADDLE_TRAINERS_NUM", "two");
  expect_rejected("", {"PADDLE_TRAINERS_NUM=two in the environment", "positive number"});
  set("PADDLE_TRAINERS_NUM", "2");
  set("PADDLE_TRAINER_ID", "-1");
  expect_rejected("--master h:1", {"PADDLE_TRAINER_ID=-1 in the environment"});
  set("PADDLE_TRAINER_ID", "2");
  expect_rejected("--master h:1", {"PADDLE_TRAINER_ID=2 is out of range", "PADDLE_TRAINERS_NUM=2"});
  set("PADDLE_TRAINER_ID", "1");
  expect_rejected("--nnodes 3 --master h:1",
                  {"--nnodes 3 disagrees with PADDLE_TRAINERS_NUM=2 in the environment"});
  expect_rejected("--node-rank 0 --master h:1",
                  {"--node-rank 0 disagrees with PADDLE_TRAINER_ID=1 in the environment"});
  expect_rejected("", {"PADDLE_TRAINERS_NUM=2 needs --master HOST:PORT"});

  set("PADDLE_TRAINER_ENDPOINTS", "h:1,h:2,h:3");
  expect_rejected("", {"PADDLE_TRAINER_ENDPOINTS lists 3 endpoints", "PADDLE_TRAINERS_NUM=2"});
  set("PADDLE_TRAINER_ENDPOINTS", "h:1,h");
  expect_rejected("", {"PADDLE_TRAINER_ENDPOINTS entry 1", "expected HOST:PORT", "'h'"});
  set("PADDLE_TRAINER_ENDPOINTS", "h:1,h:2");
  expect_rejected("--master h:9",
                  {"--master h:9 disagrees with PADDLE_TRAINER_ENDPOINTS", "is h:1"});
  set("PADDLE_CURRENT_ENDPOINT", "h:1");
  expect_rejected("", {"PADDLE_CURRENT_ENDPOINT=h:1 is not entry 1 of PADDLE_TRAINER_ENDPOINTS "
                       "(h:2)"});
  set("PADDLE_CURRENT_ENDPOINT", "h:2");
  EXPECT_EQ(parse("").node_rank, 1);

  ::unsetenv("PADDLE_TRAINER_ENDPOINTS");
  expect_rejected("--master h:1", {"PADDLE_CURRENT_ENDPOINT is set", "without "
                                   "PADDLE_TRAINER_ENDPOINTS"});
}

TEST_F(LaunchOptions, EndpointText) {
  EXPECT_EQ(parse_endpoint("node-3.example:1", "x"), (endpoint{"node-3.example", 1}));
  EXPECT_EQ(parse_endpoint("[fe80::1]:65535", "x").text(), "[fe80::1]:65535");
  expect_error([] { parse_endpoint("h:1:2", "PADDLE_CURRENT_ENDPOINT"); },
               {"PADDLE_CURRENT_ENDPOINT: expected HOST:PORT"});
}

TEST_F(LaunchOptions, HelpSaysWhatTheFlagsDo) {
  std::ostringstream help;
  const char* argv[] = {"pe-actor-run", "--help"};
  EXPECT_FALSE(parse_options(2, argv, help));
  for (const char* fact : {"--nnodes N", "--node-rank R", "--master HOST:PORT",
                           "--peer-timeout SECONDS", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ID",
                           "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT", "world size",
                           "(=10)", "--save-every K", "exits with status 130 or 143",
                           "--collective-backend NAME", "auto, shm when",
                           "engine's own, over CAF networking"})
    EXPECT_NE(help.str().find(fact), std::string::npos) << fact;
}

} // namespace
} // namespace pe

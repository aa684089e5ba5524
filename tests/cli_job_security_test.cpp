// pe-actor-run's job-security flags end to end: --job-token-file and $PE_ACTOR_JOB_TOKEN
// (a stranger process with another token is refused, rank 0 says so and trains with its own
// rank 1), --tls-cert/--tls-key/--tls-ca (a job over mutual TLS trains as a plain one does),
// and the flags' checks before anything connects.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/expect_error.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/job.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_pki.hpp"

namespace pe {
namespace {

using namespace std::chrono_literals;
using testing::contains;
using testing::temp_dir;

const std::vector<std::string> training = {"--model", "mlp", "--hidden", "8", "--places", "cpu:1",
                                           "--steps", "4", "--batch-size", "64"};

/// A token file of `text`, mode `mode`.
std::string token_file(const temp_dir& dir, const std::string& name, const std::string& text, mode_t mode = 0600) {
  const auto path = dir.file(name);
  testing::write_file(path, text);
  ::chmod(path.c_str(), mode);
  return path;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

testing::run_result run(const std::string& args, const temp_dir& dir) {
  return testing::run_binary(testing::pe_actor_run_binary(), args, dir.path());
}

TEST(JobSecurityFlags, AreCheckedBeforeAnythingConnects) {
  temp_dir dir("job_security_flags");
  const std::string job = "--model mlp --places cpu:1 --nnodes 2 --node-rank 0 --master 127.0.0.1:" +
                          std::to_string(testing::free_port()) + " ";
  const auto open_file = token_file(dir, "open", "0123456789abcdef0123456789abcdef", 0644);
  auto r = run(job + "--job-token-file " + open_file, dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "other users may read it (mode 644)")) << r.err;
  EXPECT_TRUE(contains(r.err, "chmod 600 " + open_file)) << r.err;

  r = run(job + "--job-token-file " + token_file(dir, "short", "secret\n"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "holds a job token of 6 bytes; give at least 16")) << r.err;

  r = testing::run_binary(testing::pe_actor_run_binary(), job, dir.path(), "PE_ACTOR_JOB_TOKEN=short");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "$PE_ACTOR_JOB_TOKEN holds a job token of 5 bytes")) << r.err;

  r = run(job + "--job-token-file " + dir.file("absent"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--job-token-file " + dir.file("absent") + ": No such file")) << r.err;

  r = run("--model mlp --steps 1 --job-token-file " + token_file(dir, "one", "0123456789abcdef0123"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "this run has one process (--nnodes 1)")) << r.err;

  const auto pki = testing::make_test_pki(dir.path() / "pki");
  r = run(job + "--tls-cert " + pki.rank0.certificate, dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--tls-key is not given")) << r.err;
  r = run(job + "--tls-cert " + pki.stranger.certificate + " --tls-key " + pki.stranger.key + " --tls-ca " +
              pki.rank0.ca, dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "is not accepted by --tls-ca")) << r.err;
  r = run(job + "--collective-backend gloo --tls-cert " + pki.rank0.certificate + " --tls-key " + pki.rank0.key +
              " --tls-ca " + pki.rank0.ca, dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "which TLS would not cover")) << r.err;
}

TEST(JobToken, AStrangerWithAnotherTokenIsRefusedAndTheJobTrains) {
  temp_dir dir("job_token_stranger");
  const auto ours = token_file(dir, "ours", "ours-0123456789abcdef0123456789ab");
  const auto theirs = token_file(dir, "theirs", "theirs-0123456789abcdef0123456789");
  const std::vector<std::string> where = {"--nnodes", "2", "--master", "127.0.0.1:" + std::to_string(testing::free_port())};
  testing::rank_process master(with(with(training, where), {"--node-rank", "0", "--job-token-file", ours}),
                               dir.file("out0"), dir.file("err0"));
  testing::rank_process stranger(with(with(training, where), {"--node-rank", "1", "--job-token-file", theirs}),
                                 dir.file("outs"), dir.file("errs"));
  ASSERT_EQ(stranger.wait(60s), 2) << stranger.err();
  EXPECT_TRUE(contains(stranger.err(), "the master refused this process: it did not prove that it holds the job token"))
      << stranger.err();
  const auto deadline = std::chrono::steady_clock::now() + 30s; // rank 0 says so on stderr
  while (!contains(master.err(), "refused a process claiming rank 1") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(contains(master.err(), "refused a process claiming rank 1")) << master.err();
  testing::rank_process member(with(with(training, where), {"--node-rank", "1", "--job-token-file", ours}),
                               dir.file("out1"), dir.file("err1"));
  ASSERT_EQ(member.wait(120s), 0) << member.err();
  ASSERT_EQ(master.wait(60s), 0) << master.err();
  EXPECT_TRUE(contains(master.out(), "trained 4 steps")) << master.out();
  EXPECT_TRUE(contains(master.err(), "the job goes on waiting for its own processes")) << master.err();
}

TEST(JobTls, AJobOverMutualTlsTrainsAsAPlainOne) {
  temp_dir dir("job_tls");
  const auto pki = testing::make_test_pki(dir.path() / "pki");
  const auto token = token_file(dir, "token", "tls-0123456789abcdef0123456789ab");
  testing::job plain(dir, 2, with(training, {"--job-token-file", token}));
  const auto plain_status = plain.wait();
  ASSERT_EQ(plain_status, (std::vector<std::optional<int>>{0, 0})) << plain.errors();

  temp_dir tls_dir("job_tls_run");
  const auto tls_flags = [&](const tls_files& f) {
    return std::vector<std::string>{"--tls-cert", f.certificate, "--tls-key", f.key, "--tls-ca", f.ca};
  };
  testing::job over_tls(tls_dir, 2, with(training, {"--job-token-file", token}),
                        {tls_flags(pki.rank0), tls_flags(pki.rank1)});
  const auto tls_status = over_tls.wait();
  ASSERT_EQ(tls_status, (std::vector<std::optional<int>>{0, 0})) << over_tls.errors();
  // The same losses: TLS changes how the bytes travel, not what they are.
  const auto losses = [](const std::string& out) { return out.substr(out.find("trained 4 steps")); };
  EXPECT_EQ(losses(over_tls.ranks[0]->out()).substr(0, 60), losses(plain.ranks[0]->out()).substr(0, 60));
}

} // namespace
} // namespace pe

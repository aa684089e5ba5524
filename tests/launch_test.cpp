// pe-actor-launch end to end: the real binary starting fake pe-actor-runs (shell scripts that
// record what they got and behave as each test needs), its output, exit statuses and signals;
// and its line splitting directly.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "apps/launch/line_prefixer.hpp"
#include "idx_files.hpp"
#include "tests/support/process.hpp"

extern char** environ;

namespace pe {
namespace {

using namespace std::chrono_literals;
using testing::lines_of;
using testing::slurp;
using testing::temp_dir;

/// Every wait in this file gives up after this long, so that a hanging launcher fails the
/// test instead of blocking it.
constexpr auto patience = 30s;

/// Polls `done` every 10 ms until it holds (true) or `patience` has passed (false).
bool wait_until(const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

/// Writes a fake pe-actor-run, dir/fake_run: a shell script that sets $dir, sets $rank from
/// its --node-rank flag, defines record_pid (writes its pid to $dir/pid.$rank, atomically)
/// and wait_for_ranks N (until ranks 0..N-1 have recorded theirs), then runs `body`.
std::string write_fake_run(const temp_dir& dir, const std::string& body) {
  auto path = dir.file("fake_run");
  std::ofstream(path) << "#!/bin/sh\n"
                      << "dir='" << dir.path().string() << "'\n"
                      << R"(prev=
for a in "$@"; do [ "$prev" = --node-rank ] && rank=$a; prev=$a; done
record_pid() { echo $$ > "$dir/pid.$rank.tmp" && mv "$dir/pid.$rank.tmp" "$dir/pid.$rank"; }
wait_for_ranks() {
  i=0; tries=0
  while [ $i -lt "$1" ] && [ $tries -lt 3000 ]; do
    if [ -e "$dir/pid.$i" ]; then i=$((i+1)); else sleep 0.01; tries=$((tries+1)); fi
  done
}
)" << body << "\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

/// A pe-actor-launch running in the background: in its own process group (as a shell puts a
/// job), stdin from /dev/null, stdout and stderr into files of `dir`, the test's environment
/// without PE_ACTOR_RUN plus `env` (NAME=VALUE), and SIGINT and SIGTERM at their defaults
/// whatever the test runner ignores. The destructor kills and reaps a launcher a failed test
/// left running.
class launcher {
 public:
  launcher(const std::vector<std::string>& args, const temp_dir& dir,
           const std::vector<std::string>& env)
    : out_(dir.file("stdout")), err_(dir.file("stderr")) {
    std::vector<std::string> argv_strings{PE_LAUNCH_BINARY};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<std::string> env_strings;
    for (auto** var = environ; *var; ++var)
      if (!std::string_view(*var).starts_with("PE_ACTOR_RUN="))
        env_strings.emplace_back(*var);
    env_strings.insert(env_strings.end(), env.begin(), env.end());
    auto argv = c_strings(argv_strings), envp = c_strings(env_strings);

    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&files, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETPGROUP);
    int failed = posix_spawn(&pid_, PE_LAUNCH_BINARY, &files, &attributes, argv.data(),
                             envp.data());
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&files);
    if (failed != 0)
      throw std::runtime_error("cannot start " PE_LAUNCH_BINARY);
  }
  ~launcher() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  launcher(const launcher&) = delete;
  launcher& operator=(const launcher&) = delete;

  pid_t pid() const { return pid_; }

  /// Waits for the launcher to end: its exit status, or -signal when a signal killed it.
  /// Fails the test (and kills the launcher) when it runs longer than `patience`.
  int wait() {
    int status = 0;
    bool ended = wait_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; });
    if (!ended) {
      ADD_FAILURE() << "pe-actor-launch still runs after " << patience.count() << " s";
      return -1000;
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }

 private:
  static std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings)
      out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  }

  std::string out_, err_;
  pid_t pid_ = -1;
};

/// How a launcher run to its end went.
struct launch_result {
  int status;
  std::string out;
  std::string err;
};

/// Runs pe-actor-launch `args` with `fake_run` as its pe-actor-run (none: the real lookup).
launch_result launch(const std::vector<std::string>& args, const temp_dir& dir,
                     const std::string& fake_run, std::vector<std::string> env = {}) {
  if (!fake_run.empty())
    env.push_back("PE_ACTOR_RUN=" + fake_run);
  launcher process(args, dir, env);
  auto status = process.wait();
  return {status, process.out(), process.err()};
}

/// The pids the fake ranks 0..n-1 recorded, once all have (empty when they do not in time).
std::vector<pid_t> recorded_pids(const temp_dir& dir, int n) {
  auto all = [&] {
    for (int r = 0; r < n; ++r)
      if (!std::filesystem::exists(dir.file("pid." + std::to_string(r))))
        return false;
    return true;
  };
  if (!wait_until(all))
    return {};
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r)
    pids.push_back(std::stoi(slurp(dir.file("pid." + std::to_string(r)))));
  return pids;
}

/// Whether no process `pid` exists.
bool gone(pid_t pid) {
  return ::kill(pid, 0) == -1 && errno == ESRCH;
}

/// Every process of `pids` is gone: none left running, none left a zombie.
void expect_all_gone(const std::vector<pid_t>& pids) {
  for (auto pid : pids)
    EXPECT_TRUE(gone(pid)) << pid;
}

/// Whether process `pid` has ended: gone, or a zombie its new parent has not reaped yet.
bool ended(pid_t pid) {
  if (gone(pid))
    return true;
  auto stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

/// Every line of `text` split by its "[rank R] " prefix: the lines of each rank in order.
/// Fails the test for a line without the prefix or text not ending in a newline.
std::map<int, std::vector<std::string>> lines_by_rank(const std::string& text) {
  std::map<int, std::vector<std::string>> ranks;
  EXPECT_TRUE(text.empty() || text.back() == '\n');
  static const std::regex prefixed(R"(\[rank (\d+)\] (.*))");
  for (const auto& line : lines_of(text)) {
    std::smatch match;
    if (!std::regex_match(line, match, prefixed)) {
      ADD_FAILURE() << "a line without its rank: " << line;
      continue;
    }
    ranks[std::stoi(match[1])].push_back(match[2]);
  }
  return ranks;
}

TEST(Launch, HelpDescribesEveryFlagAndExitsZero) {
  temp_dir dir("launch_help");
  auto r = launch({"--help"}, dir, "");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* fact :
       {"--nproc N", "--master-port P", "--grace SECONDS", "default: 10", "--help",
        "--nnodes N --node-rank R --master 127.0.0.1:P", "PE_ACTOR_RUN", "[rank R] ",
        "SIGTERM", "SIGKILL", "128 +", "130", "143", "status 2", "-- --help"})
    EXPECT_NE(r.out.find(fact), std::string::npos) << fact;
}

TEST(Launch, BadFlagsPrintOneErrorLineAndExitWithStatus2) {
  temp_dir dir("launch_bad_flags");
  auto fake = write_fake_run(dir, "touch \"$dir/started\"");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
    {{}, "--nproc N is required"},
    {{"--steps", "5"}, "--nproc N is required"},
    {{"--nproc"}, "--nproc needs a value"},
    {{"--nproc", "0"}, "--nproc: expected an integer from 1 to 2147483647, got '0'"},
    {{"--nproc=two"}, "--nproc: expected an integer from 1 to 2147483647, got 'two'"},
    {{"--nproc", "2", "--master-port", "70000"},
     "--master-port: expected an integer from 1 to 65535, got '70000'"},
    {{"--nproc", "2", "--grace", "-1"}, "--grace: expected seconds from 0 to 86400, got '-1'"},
    {{"--nproc", "2", "--grace", "nan"}, "--grace: expected seconds"},
    {{"--nproc", "2", "--nnodes", "2"}, "--nnodes is set by pe-actor-launch for each rank"},
    {{"--nproc", "2", "--", "--master=10.0.0.1:29500"},
     "--master is set by pe-actor-launch for each rank"},
    {{"--nproc", "2", "--node-rank", "1"}, "--node-rank is set by pe-actor-launch"},
    {{"--nproc", "2", "--node", "1"},
     "--node (pe-actor-run reads it as --node-rank) is set by pe-actor-launch"},
  };
  for (const auto& [args, message] : cases) {
    auto r = launch(args, dir, fake);
    std::string shown;
    for (const auto& a : args)
      shown += a + " ";
    EXPECT_EQ(r.status, 2) << shown;
    EXPECT_TRUE(r.out.empty()) << shown;
    EXPECT_TRUE(r.err.starts_with("pe-actor-launch: error: ")) << shown << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << shown << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << shown << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("started"))) << "no rank starts on bad flags";
}

TEST(Launch, MissingRunBinaryIsAnError) {
  temp_dir dir("launch_missing");
  auto r = launch({"--nproc", "2"}, dir, dir.file("no_such_run"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "pe-actor-launch: error: cannot run " + dir.file("no_such_run") +
                     ": No such file or directory ($PE_ACTOR_RUN)\n");
}

TEST(Launch, EachRankGetsTheUserFlagsThenItsPlaceInTheJob) {
  temp_dir dir("launch_args");
  auto fake = write_fake_run(dir, R"(printf '%s\n' "$@" > "$dir/args.$rank"
echo "${PADDLE_TRAINER_ID-unset} ${PE_LAUNCH_TEST_KEPT-unset}" > "$dir/env.$rank")");
  auto r = launch({"--steps", "5", "--nproc", "3", "--lr=0.1", "--", "--grace", "7", "--help"},
                  dir, fake, {"PADDLE_TRAINER_ID=5", "PE_LAUNCH_TEST_KEPT=yes"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  std::string master;
  for (int rank = 0; rank < 3; ++rank) {
    auto args = lines_of(slurp(dir.file("args." + std::to_string(rank))));
    ASSERT_EQ(args.size(), 12u) << rank;
    EXPECT_EQ(std::vector<std::string>(args.begin(), args.begin() + 10),
              (std::vector<std::string>{"--steps", "5", "--lr=0.1", "--grace", "7", "--help",
                                        "--nnodes", "3", "--node-rank", std::to_string(rank)}));
    EXPECT_EQ(args[10], "--master");
    EXPECT_TRUE(std::regex_match(args[11], std::regex(R"(127\.0\.0\.1:\d+)"))) << args[11];
    auto port = std::stoi(args[11].substr(10));
    EXPECT_TRUE(port >= 1 && port <= 65535) << port;
    if (rank == 0)
      master = args[11];
    EXPECT_EQ(args[11], master) << "every rank meets at the same master";
    EXPECT_EQ(slurp(dir.file("env." + std::to_string(rank))), "unset yes\n")
      << "Paddle's launch variables are left out, the rest is kept";
  }
}

TEST(Launch, EveryRankGetsTheJobsOwnToken) {
  temp_dir dir("launch_token");
  auto fake = write_fake_run(dir, R"(echo "${PE_ACTOR_JOB_TOKEN-unset}" > "$dir/token.$rank")");
  const auto tokens = [&](const std::vector<std::string>& env) {
    auto r = launch({"--nproc", "2"}, dir, fake, env);
    EXPECT_EQ(r.status, 0) << r.err;
    return std::vector<std::string>{slurp(dir.file("token.0")), slurp(dir.file("token.1"))};
  };
  const auto first = tokens({}), second = tokens({});
  EXPECT_TRUE(std::regex_match(first[0], std::regex("[0-9a-f]{64}\n"))) << first[0];
  EXPECT_EQ(first[1], first[0]) << "one token for the job";
  EXPECT_NE(second[0], first[0]) << "a fresh token for every job";
  // A token the launcher is given (one job over several launchers) is passed on unchanged.
  const auto given = tokens({"PE_ACTOR_JOB_TOKEN=shared-0123456789abcdef"});
  EXPECT_EQ(given[0], "shared-0123456789abcdef\n");
  EXPECT_EQ(given[1], "shared-0123456789abcdef\n");
}

TEST(Launch, MasterPortIsPassedOn) {
  temp_dir dir("launch_port");
  auto fake = write_fake_run(dir, R"(printf '%s\n' "$@" > "$dir/args.$rank")");
  auto r = launch({"--nproc", "2", "--master-port=29517"}, dir, fake);
  EXPECT_EQ(r.status, 0) << r.err;
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_EQ(lines_of(slurp(dir.file("args." + std::to_string(rank)))).back(),
              "127.0.0.1:29517");
}

TEST(Launch, OutputLinesArePrefixedWithTheirRankAndNeverMixed) {
  temp_dir dir("launch_output");
  auto fake = write_fake_run(dir, R"(i=0
while [ $i -lt 300 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done
printf 'split '; sleep 0.05; printf 'line\n'
printf 'no newline at the end')");
  auto r = launch({"--nproc", "3"}, dir, fake);
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::string> out, err;
  for (int i = 0; i < 300; ++i) {
    out.push_back("out " + std::to_string(i));
    err.push_back("err " + std::to_string(i));
  }
  out.insert(out.end(), {"split line", "no newline at the end"});
  auto out_ranks = lines_by_rank(r.out), err_ranks = lines_by_rank(r.err);
  EXPECT_EQ(out_ranks.size(), 3u);
  EXPECT_EQ(err_ranks.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(out_ranks[rank], out) << rank;
    EXPECT_EQ(err_ranks[rank], err) << rank;
  }
}

TEST(Launch, FailingRankEndsTheOthersAndGivesItsStatus) {
  temp_dir dir("launch_fail");
  auto fake = write_fake_run(dir, R"(record_pid
if [ "$rank" = 1 ]; then wait_for_ranks 3; echo "rank 1 fails"; exit 3; fi
exec sleep 60)");
  launcher process({"--nproc", "3"}, dir, {"PE_ACTOR_RUN=" + fake});
  auto pids = recorded_pids(dir, 3);
  ASSERT_EQ(pids.size(), 3u);
  EXPECT_EQ(process.wait(), 3);
  auto err = process.err();
  EXPECT_NE(err.find("pe-actor-launch: rank 1 exited with status 3; sending SIGTERM to the "
                     "other ranks\n"),
            std::string::npos)
    << err;
  EXPECT_EQ(err.find("SIGKILL"), std::string::npos) << "SIGTERM ends sleep: " << err;
  EXPECT_EQ(process.out(), "[rank 1] rank 1 fails\n");
  expect_all_gone(pids);
}

TEST(Launch, RankKilledBySignalGivesStatus128PlusTheSignal) {
  temp_dir dir("launch_signal");
  auto fake = write_fake_run(dir, R"(record_pid
if [ "$rank" = 1 ]; then wait_for_ranks 2; kill -KILL $$; fi
exec sleep 60)");
  launcher process({"--nproc", "2"}, dir, {"PE_ACTOR_RUN=" + fake});
  auto pids = recorded_pids(dir, 2);
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_EQ(process.wait(), 128 + SIGKILL);
  EXPECT_NE(process.err().find("pe-actor-launch: rank 1 was killed by signal 9 (SIGKILL); "
                               "sending SIGTERM to the other ranks\n"),
            std::string::npos)
    << process.err();
  expect_all_gone(pids);
}

TEST(Launch, RankIgnoringSigtermIsKilledAfterTheGrace) {
  temp_dir dir("launch_grace");
  auto fake = write_fake_run(dir, R"(
if [ "$rank" = 1 ]; then record_pid; wait_for_ranks 3; exit 3; fi
trap '' TERM
record_pid
exec sleep 60)");
  launcher process({"--nproc", "3", "--grace", "0.3"}, dir, {"PE_ACTOR_RUN=" + fake});
  auto pids = recorded_pids(dir, 3);
  ASSERT_EQ(pids.size(), 3u);
  EXPECT_EQ(process.wait(), 3);
  auto err = process.err();
  EXPECT_NE(err.find("rank 1 exited with status 3; sending SIGTERM"), std::string::npos) << err;
  for (int rank : {0, 2})
    EXPECT_NE(err.find("pe-actor-launch: rank " + std::to_string(rank) +
                       " did not stop within 0.3 s of SIGTERM; sending SIGKILL\n"),
              std::string::npos)
      << err;
  expect_all_gone(pids);
}

/// A signal to the launcher reaches every rank (which traps it, writes a marker and exits
/// with 128 + the signal, as pe-actor-run does), and the launcher exits with the same status.
void expect_forwarded(int sig, const std::string& name, int status) {
  temp_dir dir("launch_forward_" + name);
  auto fake = write_fake_run(dir, "trap 'echo " + name + " > \"$dir/got.$rank\"; exit " +
                                    std::to_string(status) + "' " + name + R"(
record_pid
while :; do sleep 0.1; done)");
  launcher process({"--nproc", "3"}, dir, {"PE_ACTOR_RUN=" + fake});
  auto pids = recorded_pids(dir, 3);
  ASSERT_EQ(pids.size(), 3u);
  ASSERT_EQ(::kill(process.pid(), sig), 0);
  EXPECT_EQ(process.wait(), status);
  EXPECT_NE(process.err().find("pe-actor-launch: got SIG" + name + "; forwarding it to every rank"),
            std::string::npos)
    << process.err();
  EXPECT_EQ(process.err().find("exited with status"), std::string::npos)
    << "ranks ending on the launcher's signal are no failure: " << process.err();
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_EQ(slurp(dir.file("got." + std::to_string(rank))), name + "\n") << rank;
  expect_all_gone(pids);
}

TEST(Launch, SigtermIsForwardedToEveryRank) {
  expect_forwarded(SIGTERM, "TERM", 143);
}

TEST(Launch, SigintIsForwardedToEveryRank) {
  expect_forwarded(SIGINT, "INT", 130);
}

TEST(Launch, CtrlCToTheLaunchersGroupStopsEveryRankOnce) {
  temp_dir dir("launch_ctrl_c");
  // Each rank records its process group: its own, so that a Ctrl-C in the launcher's terminal
  // reaches it only through the launcher (two SIGINTs close together would kill pe-actor-run
  // at once instead of at a step boundary; a shell cannot count them, so the group is checked).
  auto fake = write_fake_run(dir, R"(trap 'echo INT >> "$dir/got.$rank"; exit 130' INT
cut -d' ' -f5 /proc/$$/stat > "$dir/group.$rank"
record_pid
while :; do sleep 0.1; done)");
  launcher process({"--nproc", "2"}, dir, {"PE_ACTOR_RUN=" + fake});
  auto pids = recorded_pids(dir, 2);
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(::kill(-process.pid(), SIGINT), 0) << "what Ctrl-C in the launcher's terminal does";
  EXPECT_EQ(process.wait(), 130);
  EXPECT_EQ(process.err().find("while the ranks are stopping"), std::string::npos)
    << "one Ctrl-C is one signal: " << process.err();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(slurp(dir.file("got." + std::to_string(rank))), "INT\n") << rank;
    EXPECT_EQ(slurp(dir.file("group." + std::to_string(rank))),
              std::to_string(pids[static_cast<std::size_t>(rank)]) + "\n")
      << "rank " << rank << " leads its own process group";
  }
  expect_all_gone(pids);
}

TEST(Launch, SecondSignalKillsEveryRank) {
  temp_dir dir("launch_second");
  auto fake = write_fake_run(dir, R"(trap 'echo TERM > "$dir/got.$rank"' TERM
record_pid
while :; do sleep 0.1; done)");
  launcher process({"--nproc", "2"}, dir, {"PE_ACTOR_RUN=" + fake});
  auto pids = recorded_pids(dir, 2);
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(::kill(process.pid(), SIGTERM), 0);
  ASSERT_TRUE(wait_until([&] {
    return std::filesystem::exists(dir.file("got.0")) &&
           std::filesystem::exists(dir.file("got.1"));
  })) << "the first SIGTERM reaches the ranks, which go on";
  ASSERT_EQ(::kill(process.pid(), SIGTERM), 0);
  EXPECT_EQ(process.wait(), 143);
  EXPECT_NE(process.err().find("pe-actor-launch: got SIGTERM while the ranks are stopping; "
                               "sending SIGKILL to every rank\n"),
            std::string::npos)
    << process.err();
  expect_all_gone(pids);
}

TEST(Launch, KilledLauncherTakesItsRanksWithIt) {
  temp_dir dir("launch_killed");
  auto fake = write_fake_run(dir, "record_pid\nexec sleep 60");
  launcher process({"--nproc", "2"}, dir, {"PE_ACTOR_RUN=" + fake});
  auto pids = recorded_pids(dir, 2);
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(::kill(process.pid(), SIGKILL), 0);
  EXPECT_EQ(process.wait(), -SIGKILL);
  for (auto pid : pids)
    EXPECT_TRUE(wait_until([&] { return ended(pid); })) << pid << " outlived its launcher";
}

TEST(Launch, StartsThePeActorRunBesideItself) {
  temp_dir dir("launch_default");
  // Whether this pe-actor-run knows the rank flags yet or refuses them, it answers.
  auto r = launch({"--nproc", "1", "--", "--help"}, dir, "");
  EXPECT_TRUE(std::regex_search(r.out + r.err, std::regex(R"(\[rank 0\] .*pe-actor-run)")))
    << r.out << r.err;
}

TEST(LinePrefixer, PassesOnWholeLinesOnly) {
  line_prefixer lines("[rank 2] ");
  EXPECT_EQ(lines.feed("a"), "");
  EXPECT_EQ(lines.feed("b\nc\nd"), "[rank 2] ab\n[rank 2] c\n");
  EXPECT_EQ(lines.feed("\n\n"), "[rank 2] d\n[rank 2] \n");
  EXPECT_EQ(lines.feed("tail"), "");
  EXPECT_EQ(lines.finish(), "[rank 2] tail\n");
  EXPECT_EQ(lines.finish(), "");
}

TEST(LinePrefixer, CutsALineLongerThanTheLimit) {
  line_prefixer lines("> ");
  std::string half(line_prefixer::max_line / 2, 'x');
  EXPECT_EQ(lines.feed(half), "");
  EXPECT_EQ(lines.feed(half + "yz\n"), "> " + half + half + "\n> yz\n");
}

} // namespace
} // namespace pe

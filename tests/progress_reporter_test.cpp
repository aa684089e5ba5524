// Training progress (issue 23): one line rewritten in place on a terminal, plain lines by
// time or every --log-every steps elsewhere. The reporter with a fake clock and a string
// stream, then the real pe-actor-run through a pipe and under a pseudo-terminal.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "apps/run/options.hpp"
#include "apps/run/progress_reporter.hpp"
#include "core/error.hpp"
#include "idx_files.hpp"
#include "tests/support/process.hpp"


namespace pe {
namespace {

using testing::lines_of;

/// A clock the test moves by hand.
struct fake_clock {
  double now = 0;
  progress_reporter::clock function() {
    return [this] { return now; };
  }
};

/// The step numbers of the "step s/S" lines in `text`, in order: plain lines, or the
/// in-place updates of a terminal (each starting after a '\r').
std::vector<std::int64_t> shown_steps(const std::string& text) {
  std::vector<std::int64_t> steps;
  static const std::regex step_line(R"((?:^|[\r\n])step ([0-9]+)/)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), step_line);
       it != std::sregex_iterator(); ++it)
    steps.push_back(std::stoll((*it)[1]));
  return steps;
}

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last, std::int64_t stride) {
  std::vector<std::int64_t> values;
  for (auto v = first; v <= last; v += stride)
    values.push_back(v);
  return values;
}

/// Plain lines up to `last_step`, by time or (log_every > 0) every log_every steps.
progress_reporter::settings plain(std::int64_t last_step, std::int64_t log_every = 0) {
  progress_reporter::settings s;
  s.last_step = last_step;
  s.log_every = log_every;
  return s;
}

progress_reporter::settings terminal(std::int64_t last_step, int columns = 0) {
  auto s = plain(last_step);
  s.display = {true, columns};
  return s;
}

/// A reporter writing into a string, on a clock the test moves. Not copied or moved: the
/// reporter holds the stream and the clock.
struct string_reporter {
  explicit string_reporter(const progress_reporter::settings& settings)
      : progress(out, settings, clock.function()) {}
  std::ostringstream out;
  fake_clock clock;
  progress_reporter progress;
};

/// Runs steps 1..last_step of `seconds_per_step` each, loss 1, 64 samples.
std::string run(const progress_reporter::settings& settings, double seconds_per_step) {
  string_reporter r(settings);
  for (std::int64_t step = settings.first_step; step <= settings.last_step; ++step) {
    r.clock.now += seconds_per_step;
    r.progress.step(step, 1.0, 64);
  }
  r.progress.finish();
  return r.out.str();
}

TEST(ProgressFormat, DurationsReadAsAClock) {
  EXPECT_EQ(progress_reporter::format_duration(0), "0s");
  EXPECT_EQ(progress_reporter::format_duration(0.4), "0s");
  EXPECT_EQ(progress_reporter::format_duration(12.4), "12s");
  EXPECT_EQ(progress_reporter::format_duration(59.6), "1m00s");
  EXPECT_EQ(progress_reporter::format_duration(65), "1m05s");
  EXPECT_EQ(progress_reporter::format_duration(3599.4), "59m59s");
  EXPECT_EQ(progress_reporter::format_duration(3600), "1h00m");
  EXPECT_EQ(progress_reporter::format_duration(3720), "1h02m");
  EXPECT_EQ(progress_reporter::format_duration(100 * 3600 + 59), "100h00m");
  EXPECT_EQ(progress_reporter::format_duration(-3), "0s");
  EXPECT_EQ(progress_reporter::format_duration(std::nan("")), "?");
  EXPECT_EQ(progress_reporter::format_duration(std::numeric_limits<double>::infinity()), "?");
}

TEST(ProgressFormat, ALineHasTheStepLossSmoothedLossRateElapsedAndEta) {
  string_reporter r(plain(10, 1));
  r.clock.now = 5; // a slow warm-up step: left out of samples/s and the ETA
  r.progress.step(1, 2.0, 64);
  r.clock.now = 5.5;
  r.progress.step(2, 1.5, 64);
  r.clock.now = 6.0;
  r.progress.step(3, 1.0, 64);
  const auto lines = lines_of(r.out.str());
  ASSERT_EQ(lines.size(), 3u) << r.out.str();
  EXPECT_EQ(lines[0], "step 1/10  loss 2  (smoothed 2)  elapsed 5s");
  // 64 samples in 0.5 s; 8 steps left at 0.5 s; the smoothed loss 2 + 0.1 * (1.5 - 2).
  EXPECT_EQ(lines[1], "step 2/10  loss 1.5  (smoothed 1.95)  128.0 samples/s  elapsed 6s  ETA 4s");
  // 1.95 + 0.1 * (1 - 1.95) = 1.855.
  EXPECT_EQ(lines[2], "step 3/10  loss 1  (smoothed 1.855)  128.0 samples/s  elapsed 6s  ETA 4s");
}

TEST(ProgressFormat, TheSmoothedLossIsAnExponentialMovingAverageSeededWithTheFirstLoss) {
  string_reporter r(plain(50, 50));
  double smoothed = 0;
  for (int step = 1; step <= 50; ++step) {
    const double loss = step == 1 ? 10.0 : 0.0;
    smoothed = step == 1 ? loss : smoothed + 0.1 * (loss - smoothed);
    r.clock.now += 1;
    r.progress.step(step, loss, 8);
  }
  ASSERT_NEAR(smoothed, 10 * std::pow(0.9, 49), 1e-12);
  std::ostringstream expected;
  expected << "(smoothed " << std::setprecision(4) << smoothed << ")";
  const auto lines = lines_of(r.out.str());
  ASSERT_EQ(lines.size(), 2u) << r.out.str();
  EXPECT_NE(lines[1].find("step 50/50  loss 0  " + expected.str()), std::string::npos) << lines[1];
}

TEST(ProgressFormat, EpochsShowOnlyForARunCountedInEpochs) {
  auto settings = plain(25, 1); // 3 epochs of 10, 10 and 5 batches
  settings.steps_per_epoch = 10;
  const auto lines = lines_of(run(settings, 1));
  ASSERT_EQ(lines.size(), 25u);
  EXPECT_NE(lines[0].find("  epoch 1/3  "), std::string::npos) << lines[0];
  EXPECT_NE(lines[9].find("  epoch 1/3  "), std::string::npos) << lines[9];
  EXPECT_NE(lines[10].find("  epoch 2/3  "), std::string::npos) << lines[10];
  EXPECT_NE(lines[24].find("  epoch 3/3  "), std::string::npos) << lines[24];
  settings.steps_per_epoch = 0;
  for (const auto& line : lines_of(run(settings, 1)))
    EXPECT_EQ(line.find("epoch"), std::string::npos) << line;
}

TEST(ProgressFormat, AResumedRunTimesFromItsOwnFirstStep) {
  auto settings = plain(12, 1);
  settings.first_step = 7;
  string_reporter r(settings);
  r.clock.now = 3;
  r.progress.step(7, 1, 32);
  r.clock.now = 4;
  r.progress.step(8, 1, 32);
  const auto lines = lines_of(r.out.str());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "step 7/12  loss 1  (smoothed 1)  elapsed 3s");
  EXPECT_EQ(lines[1], "step 8/12  loss 1  (smoothed 1)  32.0 samples/s  elapsed 4s  ETA 4s");
}

TEST(ProgressPlain, ByDefaultALineEveryTenSecondsPlusTheFirstAndTheLast) {
  // 1000 steps of 0.125 s: 125 s, the first step at 0.125 s, then every 80 steps (10 s).
  const auto text = run(plain(1000), 0.125);
  auto expected = range(1, 1000, 80); // 1, 81, ..., 961
  expected.push_back(1000);
  EXPECT_EQ(shown_steps(text), expected) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  for (const auto& line : lines_of(text))
    EXPECT_TRUE(std::regex_match(line, std::regex(R"(step [0-9]+/1000  loss 1  \(smoothed 1\).*)")))
        << line;
  EXPECT_TRUE(text.ends_with("ETA 0s\n")) << text;
}

TEST(ProgressPlain, TheTimeCadenceCountsAboutOneLinePerIntervalOfWork) {
  // 1000 steps of 0.05 s: 50 s of work, a line about every 10 s, plus the first and last.
  const auto steps = shown_steps(run(plain(1000), 0.05));
  EXPECT_GE(steps.size(), 1000 * 0.05 / 10 + 1);
  EXPECT_LE(steps.size(), 1000 * 0.05 / 10 + 2);
  EXPECT_EQ(steps.front(), 1);
  EXPECT_EQ(steps.back(), 1000);
}

TEST(ProgressPlain, SlowStepsAreEachShown) {
  // Steps longer than the interval: every one is due.
  EXPECT_EQ(shown_steps(run(plain(5), 12)), range(1, 5, 1));
}

TEST(ProgressPlain, LogEveryPrintsEveryNthStepWhateverTheTime) {
  auto settings = plain(20, 5);
  EXPECT_EQ(shown_steps(run(settings, 0.001)), (std::vector<std::int64_t>{1, 5, 10, 15, 20}));
  EXPECT_EQ(shown_steps(run(settings, 100)), (std::vector<std::int64_t>{1, 5, 10, 15, 20}));
  settings.last_step = 22;
  EXPECT_EQ(shown_steps(run(settings, 1)), (std::vector<std::int64_t>{1, 5, 10, 15, 20, 22}));
}

TEST(ProgressPlain, ANonFiniteLossIsAlwaysShown) {
  string_reporter r(plain(100));
  for (int step = 1; step <= 3; ++step) {
    r.clock.now += 0.01;
    r.progress.step(step, step == 3 ? std::nan("") : 1.0, 64);
  }
  EXPECT_EQ(shown_steps(r.out.str()), (std::vector<std::int64_t>{1, 3}));
  EXPECT_NE(r.out.str().find("step 3/100  loss nan"), std::string::npos) << r.out.str();
}

TEST(ProgressPlain, FinishWritesNothing) {
  std::ostringstream out;
  fake_clock clock;
  {
    progress_reporter progress(out, plain(100), clock.function());
    progress.step(1, 1, 1);
    clock.now = 1;
    progress.step(2, 1, 1); // not due
    const auto before = out.str();
    progress.finish();
    EXPECT_EQ(out.str(), before);
  }
  EXPECT_EQ(shown_steps(out.str()), std::vector<std::int64_t>{1});
}

TEST(ProgressTerminal, OneLineIsRewrittenInPlaceAndFinishEndsIt) {
  string_reporter r(terminal(3));
  std::vector<std::string> drawn;
  for (int step = 1; step <= 3; ++step) {
    r.clock.now += 1;
    const auto before = r.out.str().size();
    r.progress.step(step, 1.0, 64);
    drawn.push_back(r.out.str().substr(before));
  }
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    EXPECT_TRUE(drawn[i].starts_with("\rstep " + std::to_string(i + 1) + "/3  loss 1")) << drawn[i];
    EXPECT_TRUE(drawn[i].ends_with("\x1b[K")) << "erase what a longer line left: " << drawn[i];
  }
  EXPECT_EQ(r.out.str().find('\n'), std::string::npos) << "no newline while the line is in place";
  r.progress.finish();
  EXPECT_EQ(r.out.str(), drawn[0] + drawn[1] + drawn[2] + "\n");
  r.progress.finish(); // nothing open: nothing more
  const auto text = r.out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

TEST(ProgressTerminal, UpdatesAreThrottledToTenASecond) {
  // 1000 steps of 1/128 s (7.8 s): a redraw once 0.1 s has passed, every 13th step.
  const auto text = run(terminal(1000), 1.0 / 128);
  const auto steps = shown_steps(text);
  const auto redraws = static_cast<double>(std::count(text.begin(), text.end(), '\r'));
  EXPECT_EQ(redraws, static_cast<double>(steps.size()));
  EXPECT_LE(redraws, 1000.0 / 128 / 0.1 + 2) << "at most ten a second, plus the last";
  EXPECT_GE(redraws, 1000.0 / 128 / 0.1 - 2);
  EXPECT_EQ(steps.front(), 1);
  EXPECT_EQ(steps[1], 14); // 13/128 s >= 0.1 s after step 1
  EXPECT_EQ(steps.back(), 1000);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_TRUE(text.ends_with("\x1b[K\n")) << text;
}

TEST(ProgressTerminal, FinishShowsAStepTheThrottleSkippedBeforeEndingTheLine) {
  string_reporter r(terminal(10));
  r.clock.now = 0.01;
  r.progress.step(1, 1, 64);
  r.clock.now = 0.02;
  r.progress.step(2, 1, 64); // within 0.1 s of step 1: not drawn
  EXPECT_EQ(shown_steps(r.out.str()), std::vector<std::int64_t>{1});
  r.progress.finish(); // e.g. before a checkpoint's "saved ..." line
  EXPECT_EQ(shown_steps(r.out.str()), (std::vector<std::int64_t>{1, 2}));
  EXPECT_TRUE(r.out.str().ends_with("\x1b[K\n")) << r.out.str();
  // The next step starts a new in-place line below.
  r.clock.now = 0.03;
  r.progress.step(3, 1, 64);
  EXPECT_TRUE(r.out.str().ends_with("\n\rstep 3/10  loss 1  (smoothed 1)  6400.0 samples/s  "
                                    "elapsed 0s  ETA 0s\x1b[K"))
      << r.out.str();
}

TEST(ProgressTerminal, DestroyingTheReporterEndsAnOpenLine) {
  std::ostringstream out;
  fake_clock clock;
  {
    progress_reporter progress(out, terminal(10), clock.function());
    progress.step(1, 1, 64); // an exception unwinds the loop here
  }
  EXPECT_TRUE(out.str().ends_with("\x1b[K\n")) << out.str();
}

TEST(ProgressTerminal, LinesAreCutToTheTerminalWidth) {
  const auto text = run(terminal(100, 40), 1);
  for (std::size_t at = text.find('\r'); at != std::string::npos; at = text.find('\r', at + 1)) {
    const auto end = text.find("\x1b[K", at);
    ASSERT_NE(end, std::string::npos);
    EXPECT_EQ(end - at - 1, 39u) << "one column left, so the line never wraps";
  }
  EXPECT_GT(run(terminal(100), 1).find("ETA"), 40u) << "the test's lines are wider than 40";
}

TEST(ProgressTerminal, LogEveryKeepsEveryNthLineOnTheScreen) {
  auto settings = terminal(10);
  settings.log_every = 5;
  const auto text = run(settings, 1);
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 2u) << text;
  EXPECT_TRUE(lines[0].ends_with("\rstep 5/10  loss 1  (smoothed 1)  64.0 samples/s  elapsed 5s  "
                                 "ETA 5s\x1b[K"))
      << lines[0];
  EXPECT_NE(lines[1].find("\rstep 10/10"), std::string::npos) << lines[1];
}

// --log-every on the command line.

std::optional<run_options> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "pe-actor-run");
  std::ostringstream help;
  return parse_options(static_cast<int>(args.size()), args.data(), help);
}

TEST(ProgressOptions, LogEveryIsAPositiveStepCountRecordedInTheConfig) {
  EXPECT_EQ(parse({"--places", "cpu:1"})->log_every, 0);
  EXPECT_FALSE(to_json(*parse({"--places", "cpu:1"})).contains("log_every"));
  const auto every = parse({"--places", "cpu:1", "--log-every", "25"});
  EXPECT_EQ(every->log_every, 25);
  EXPECT_EQ(to_json(*every).at("log_every"), 25);
  for (const char* bad : {"0", "-3"}) {
    try {
      parse({"--places", "cpu:1", "--log-every", bad});
      ADD_FAILURE() << "--log-every " << bad << " accepted";
    } catch (const error& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with("--log-every must be at least 1")) << e.what();
    }
  }
  EXPECT_THROW(parse({"--places", "cpu:1", "--log-every", "ten"}), error);
}

TEST(ProgressOptions, HelpDescribesLogEvery) {
  std::ostringstream help;
  const char* args[] = {"pe-actor-run", "--help"};
  EXPECT_FALSE(parse_options(2, args, help).has_value());
  for (const char* fact : {"--log-every N", "in place", "10 s", "N >= 1", "0 is refused"})
    EXPECT_NE(help.str().find(fact), std::string::npos) << fact;
}

// The real pe-actor-run.

const std::string small_run = " --places cpu:1 --hidden 16 --batch-size 16 ";

/// Runs pe-actor-run `args` (without CPU_NUM) with its stdout and stderr one pipe; returns
/// the output, and the exit status in `status`.
std::string run_piped(const std::string& args, int& status) {
  const auto command = "env -u CPU_NUM " + pe::testing::pe_actor_run_binary() + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr)
    return "popen failed";
  std::string text;
  char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;)
    text.append(chunk, n);
  const int raw = ::pclose(pipe);
  status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return text;
}

TEST(ProgressCli, APipeGetsPlainLinesEveryLogEverySteps) {
  int status = -1;
  const auto text = run_piped("--steps 20 --log-every 5" + small_run, status);
  ASSERT_EQ(status, 0) << text;
  EXPECT_EQ(shown_steps(text), (std::vector<std::int64_t>{1, 5, 10, 15, 20})) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  const std::regex step_line(
    R"(step ([0-9]+)/20  loss [0-9.e+-]+  \(smoothed [0-9.e+-]+\)(  [0-9.]+ samples/s)?  elapsed [0-9hms]+(  ETA [0-9hms]+)?)");
  for (const auto& line : lines_of(text)) {
    if (line.starts_with("step ")) {
      EXPECT_TRUE(std::regex_match(line, step_line)) << line;
    }
  }
  EXPECT_NE(text.find("\ntrained 20 steps on cpu:1"), std::string::npos) << text;
}

TEST(ProgressCli, APipeWithoutLogEveryGetsTheFirstAndLastStepOfAShortRun) {
  int status = -1;
  const auto text = run_piped("--steps 20" + small_run, status); // far less than 10 s
  ASSERT_EQ(status, 0) << text;
  EXPECT_EQ(shown_steps(text), (std::vector<std::int64_t>{1, 20})) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
}

TEST(ProgressCli, LogEveryZeroIsRefused) {
  int status = -1;
  const auto text = run_piped("--steps 20 --log-every 0" + small_run, status);
  EXPECT_EQ(status, 2);
  EXPECT_TRUE(text.starts_with("pe-actor-run: error: --log-every must be at least 1")) << text;
}

/// Runs pe-actor-run `args` on a pseudo-terminal (200 columns, TERM=xterm, no CPU_NUM) and
/// returns what it wrote there, "\r\n" (the terminal's newline) as "\n"; `status` is its
/// exit status.
std::string run_on_terminal(const std::vector<std::string>& args, int& status) {
  const testing::exec_command command(pe::testing::pe_actor_run_binary(), args, {"TERM=xterm"});
  winsize size{};
  size.ws_row = 50;
  size.ws_col = 200;
  int terminal = -1;
  const pid_t pid = ::forkpty(&terminal, nullptr, nullptr, &size);
  if (pid == 0) { // the child: only async-signal-safe calls until exec
    command.exec();
    ::_exit(127);
  }
  if (pid < 0)
    return "forkpty failed";
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd ready{terminal, POLLIN, 0};
    if (::poll(&ready, 1, 1000) <= 0)
      continue;
    char chunk[4096];
    const auto n = ::read(terminal, chunk, sizeof chunk);
    if (n <= 0) // EIO once the child has exited and closed its side
      break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::kill(pid, SIGKILL); // no-op when it has exited
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  ::close(terminal);
  status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  for (auto at = text.find("\r\n"); at != std::string::npos; at = text.find("\r\n", at))
    text.erase(at, 1);
  return text;
}

TEST(ProgressCli, ATerminalGetsOneLineRewrittenInPlaceEndedBeforeOtherOutput) {
  testing::temp_dir dir("progress_terminal");
  int status = -1;
  const auto text = run_on_terminal({"--steps", "30", "--places", "cpu:1", "--hidden", "16",
                                     "--batch-size", "16", "--save-params", dir.file("ck"),
                                     "--save-every", "10"},
                                    status);
  ASSERT_EQ(status, 0) << text;
  const auto lines = lines_of(text);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(lines.front().starts_with("training mlp on cpu:1")) << text;
  // Each checkpoint's "saved" line follows an in-place line that finish() ended, showing the
  // step just saved (drawn then if the throttle had skipped it); the last one runs to step 30.
  std::vector<std::string> in_place, saved;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].starts_with("\rstep ")) {
      in_place.push_back(lines[i]);
      ASSERT_LT(i + 1, lines.size());
      saved.push_back(lines[i + 1]);
    }
  }
  ASSERT_EQ(in_place.size(), 3u) << text;
  for (std::size_t k = 0; k < 3; ++k) {
    const auto steps = shown_steps(in_place[k]);
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.front(), static_cast<std::int64_t>(10 * k + 1)) << in_place[k];
    EXPECT_EQ(steps.back(), static_cast<std::int64_t>(10 * k + 10)) << in_place[k];
    EXPECT_EQ(std::count(in_place[k].begin(), in_place[k].end(), '\r'),
              std::count(in_place[k].begin(), in_place[k].end(), '\x1b'))
        << "every update erases the rest of the line";
    EXPECT_TRUE(in_place[k].ends_with("\x1b[K")) << in_place[k];
    EXPECT_TRUE(saved[k].starts_with("saved ")) << saved[k];
    EXPECT_NE(saved[k].find("(checkpoint at step " + std::to_string(10 * k + 10) + ")"),
              std::string::npos)
        << saved[k];
  }
  EXPECT_GE(shown_steps(in_place[0]).size(), 2u) << "the first and the last step drawn in place";
  EXPECT_TRUE(lines.back().starts_with("trained 30 steps on cpu:1")) << text;
}

} // namespace
} // namespace pe

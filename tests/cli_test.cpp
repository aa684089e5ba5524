// pe-actor-run end to end: the real binary, its exit codes, output and files.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/program_io.hpp"
#include "idx_files.hpp"

namespace pe {
namespace {

using testing::temp_dir;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct run_result {
  int status; ///< exit code; -1 when killed by a signal
  std::string out;
  std::string err;
};

/// Runs pe-actor-run with `args` (shell words), capturing its output in `dir`.
run_result run(const std::string& args, const temp_dir& dir) {
  auto out = dir.file("stdout"), err = dir.file("stderr");
  auto command = std::string(PE_RUN_BINARY) + " " + args + " >" + out + " 2>" + err;
  int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
}

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(slurp(path));
}

std::vector<double> losses(const nlohmann::json& metrics) {
  std::vector<double> out;
  for (const auto& step : metrics.at("steps"))
    out.push_back(step.at("loss").get<double>());
  return out;
}

double mean(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double sum = 0;
  for (auto i = begin; i < end; ++i)
    sum += v[i];
  return sum / static_cast<double>(end - begin);
}

/// The loss of the last five steps is clearly below that of the first five.
void expect_falling(const std::vector<double>& loss, double factor) {
  ASSERT_GE(loss.size(), 10u);
  for (auto l : loss)
    ASSERT_TRUE(std::isfinite(l));
  EXPECT_LT(mean(loss, loss.size() - 5, loss.size()), factor * mean(loss, 0, 5));
}

TEST(Cli, HelpListsEveryFlagAndExitsZero) {
  temp_dir dir("cli_help");
  auto r = run("--help", dir);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* flag :
       {"--model", "--startup", "--hidden", "--steps", "--epochs", "--batch-size", "--lr",
        "--optimizer", "--seed", "--data", "--eval", "--normalize", "--save-program",
        "--metrics", "--places", "--executor", "--blas-threads"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  for (const char* fact : {"default: 0.1 for sgd", "warm-up", "idx:DIR", "cpu:1"})
    EXPECT_NE(r.out.find(fact), std::string::npos) << fact;
}

struct bad_invocation {
  const char* args;
  const char* message; ///< part of the error line
};

class CliRejects : public ::testing::TestWithParam<bad_invocation> {};

TEST_P(CliRejects, WithOneErrorLineAndStatusTwo) {
  temp_dir dir("cli_rejects");
  auto r = run(GetParam().args, dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.starts_with("pe-actor-run: error: ")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
  BadFlags, CliRejects,
  ::testing::Values(
    bad_invocation{"--bogus", "bogus"},
    bad_invocation{"stray", "positional"},
    bad_invocation{"--seed -1", "--seed"},
    bad_invocation{"--steps", "steps"},
    bad_invocation{"--steps abc", "abc"},
    bad_invocation{"--steps 0", "--steps must be positive"},
    bad_invocation{"--optimizer rmsprop", "rmsprop"},
    bad_invocation{"--hidden 256,x", "--hidden"},
    bad_invocation{"--data mnist", "mnist"},
    bad_invocation{"--normalize", "--normalize"},
    bad_invocation{"--steps 5 --epochs 1", "--steps and --epochs"},
    bad_invocation{"--places cpu:2", "only cpu:1 is supported until the actor executor lands"},
    bad_invocation{"--executor actor", "actor"},
    bad_invocation{"--blas-threads 0", "--blas-threads"},
    bad_invocation{"--startup s.pb", "--startup"},
    bad_invocation{"--model m.pb", "needs --startup"},
    bad_invocation{"--model m.pb --startup s.pb --lr 0.5", "--lr"},
    bad_invocation{"--model /nonexistent/main.pb --startup /nonexistent/startup.pb",
                   "/nonexistent/main.pb"},
    bad_invocation{"--data idx:/nonexistent/mnist", "/nonexistent/mnist"}));

TEST(Cli, TrainsSyntheticDataAndWritesMetrics) {
  temp_dir dir("cli_train");
  auto metrics_path = dir.file("metrics.json");
  auto r = run("--steps 40 --metrics " + metrics_path, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("step 1/40"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 40/40"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos) << r.out;

  auto metrics = read_json(metrics_path);
  const auto& steps = metrics.at("steps");
  ASSERT_EQ(steps.size(), 40u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].at("step").get<int>(), static_cast<int>(i) + 1);
    EXPECT_EQ(steps[i].contains("samples_per_sec"), i > 0) << "step 1 is warm-up";
  }
  EXPECT_GT(metrics.at("samples_per_sec").get<double>(), 0);
  EXPECT_GT(metrics.at("wall_s").get<double>(), 0);
  EXPECT_GT(metrics.at("peak_rss_mb").get<double>(), 1);
  EXPECT_FALSE(metrics.contains("eval"));
  const auto& config = metrics.at("config");
  EXPECT_EQ(config.at("steps").get<int>(), 40);
  EXPECT_EQ(config.at("batch_size").get<int>(), 64);
  EXPECT_EQ(config.at("optimizer").get<std::string>(), "sgd");
  EXPECT_EQ(config.at("lr").get<double>(), 0.1);
  EXPECT_EQ(config.at("hidden"), nlohmann::json({256, 128}));
  expect_falling(losses(metrics), 0.9);
}

TEST(Cli, SavedProgramsLoadAndTrainAgain) {
  temp_dir dir("cli_saved");
  auto programs = dir.file("programs");
  auto first = run("--steps 2 --hidden 32 --optimizer momentum --save-program " + programs, dir);
  ASSERT_EQ(first.status, 0) << first.err;
  for (const char* name : {"startup.pb", "main.pb", "startup.pbtxt", "main.pbtxt"}) {
    auto program = load_program(programs + "/" + name);
    EXPECT_GT(program.blocks(0).ops_size(), 0) << name;
  }
  EXPECT_EQ(load_program(programs + "/main.pb").SerializeAsString(),
            load_program(programs + "/main.pbtxt").SerializeAsString());

  auto metrics_path = dir.file("metrics.json");
  auto again = run("--model " + programs + "/main.pb --startup " + programs +
                     "/startup.pb --steps 30 --eval --metrics " + metrics_path,
                   dir);
  ASSERT_EQ(again.status, 0) << again.err;
  auto metrics = read_json(metrics_path);
  expect_falling(losses(metrics), 0.9);
  EXPECT_EQ(metrics.at("config").at("startup").get<std::string>(), programs + "/startup.pb");
  EXPECT_TRUE(metrics.contains("eval"));

  auto text = run("--model " + programs + "/main.pbtxt --startup " + programs +
                    "/startup.pbtxt --steps 2",
                  dir);
  EXPECT_EQ(text.status, 0) << text.err;
}

TEST(Cli, RejectsAProgramThatFailsValidation) {
  temp_dir dir("cli_invalid");
  auto programs = dir.file("programs");
  ASSERT_EQ(run("--steps 1 --hidden 8 --save-program " + programs, dir).status, 0);
  auto text = slurp(programs + "/main.pbtxt");
  auto op = text.find("type: \"relu\"");
  ASSERT_NE(op, std::string::npos);
  testing::write_file(dir.file("broken.pbtxt"), text.replace(op, 14, "type: \"no_such_op\""));

  auto r = run("--model " + dir.file("broken.pbtxt") + " --startup " + programs + "/startup.pb",
               dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.starts_with("pe-actor-run: error: ")) << r.err;
  EXPECT_NE(r.err.find("no_such_op"), std::string::npos) << r.err;
}

/// A tiny learnable idx data set in `dir`: 4x4 images of class k (0..3) light up row k.
void write_idx_data(const temp_dir& dir, std::uint32_t train, std::uint32_t test) {
  auto make = [](std::uint32_t count, std::uint32_t offset, std::string& images,
                 std::string& labels) {
    std::vector<std::uint8_t> pixels, classes;
    for (std::uint32_t i = 0; i < count; ++i) {
      auto k = (i + offset) % 4;
      classes.push_back(static_cast<std::uint8_t>(k));
      for (std::uint32_t p = 0; p < 16; ++p)
        pixels.push_back(static_cast<std::uint8_t>(p / 4 == k ? 200 + (i + p) % 50 : (i * p) % 40));
    }
    images = testing::idx_images(count, 4, 4, pixels);
    labels = testing::idx_labels(classes);
  };
  std::string images, labels;
  make(train, 0, images, labels);
  testing::write_file(dir.file("train-images-idx3-ubyte.gz"), images, true);
  testing::write_file(dir.file("train-labels-idx1-ubyte"), labels);
  if (test == 0)
    return;
  make(test, 1, images, labels);
  testing::write_file(dir.file("t10k-images-idx3-ubyte"), images);
  testing::write_file(dir.file("t10k-labels-idx1-ubyte.gz"), labels, true);
}

TEST(Cli, TrainsIdxDataForEpochsAndEvaluates) {
  temp_dir dir("cli_idx");
  write_idx_data(dir, 200, 40);
  auto metrics_path = dir.file("metrics.json");
  auto r = run("--data idx:" + dir.path().string() +
                 " --normalize --hidden 32 --batch-size 16 --epochs 3 --eval --metrics " +
                 metrics_path,
               dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("accuracy"), std::string::npos) << r.out;
  auto metrics = read_json(metrics_path);
  EXPECT_EQ(metrics.at("steps").size(), 3u * 13u) << "ceil(200 / 16) batches per epoch";
  const auto& eval = metrics.at("eval");
  EXPECT_GE(eval.at("accuracy").get<double>(), 0.9);
  EXPECT_LE(eval.at("accuracy").get<double>(), 1.0);
  EXPECT_TRUE(std::isfinite(eval.at("loss").get<double>()));
  EXPECT_EQ(eval.at("samples").get<int>(), 40);
}

TEST(Cli, RejectsIdxDataThatDoesNotFitTheRun) {
  temp_dir dir("cli_idx_misfit");
  write_idx_data(dir, 20, 0);
  auto data = " --data idx:" + dir.path().string();
  auto no_test = run("--eval" + data, dir);
  EXPECT_EQ(no_test.status, 2);
  EXPECT_NE(no_test.err.find("pe-actor-run: error: --eval"), std::string::npos) << no_test.err;

  auto programs = dir.file("programs");
  ASSERT_EQ(run("--steps 1 --hidden 8 --save-program " + programs, dir).status, 0);
  auto misfit =
    run("--model " + programs + "/main.pb --startup " + programs + "/startup.pb" + data, dir);
  EXPECT_EQ(misfit.status, 2);
  EXPECT_NE(misfit.err.find("width 16"), std::string::npos) << misfit.err;
  EXPECT_NE(misfit.err.find("width 784"), std::string::npos) << misfit.err;
}

} // namespace
} // namespace pe

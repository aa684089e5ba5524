// pe-actor-run end to end: the real binary, its exit codes, output and files.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/program_io.hpp"
#include "idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::temp_dir;

using testing::run_result;
using testing::slurp;

/// Runs pe-actor-run with `args` (shell words), capturing its output in `dir`; `env` as in
/// run_binary.
run_result run(const std::string& args, const temp_dir& dir, const std::string& env = "") {
  return testing::run_binary(pe::testing::pe_actor_run_binary(), args, dir.path(), env);
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

int cores() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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
        "--metrics", "--places", "--executor", "--blas-threads", "--threads", "--reduce",
        "--fuse-allreduce-mb", "--sparse-exchange", "--sync", "--dot", "--trace", "--trace-steps", "--check-hazards", "--pin-places", "--no-overlap-steps"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  for (const char* fact : {"default: 0.1 for sgd", "warm-up", "idx:DIR", "CPU_NUM",
                           "OPENBLAS_NUM_THREADS", "CUDA", "global mini-batch",
                           "chrome://tracing", "exit with status 3"})
    EXPECT_NE(r.out.find(fact), std::string::npos) << fact;
  auto here = "cpu:" + std::to_string(cores()) + ");"; // "(here cpu:N);", possibly wrapped
  EXPECT_NE(r.out.find(here), std::string::npos) << "the help names this machine's default";
}

struct bad_invocation {
  const char* args;
  const char* message; ///< part of the error line
  const char* env = "";
};

class CliRejects : public ::testing::TestWithParam<bad_invocation> {};

TEST_P(CliRejects, WithOneErrorLineAndStatusTwo) {
  temp_dir dir("cli_rejects");
  auto r = run(GetParam().args, dir, GetParam().env);
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
    bad_invocation{"--executor gpu", "--executor: expected actor or reference, got 'gpu'"},
    // --places gpu:... in every build: cli_gpu_places_test.
    bad_invocation{"--places cpu:0", "--places: expected cpu:N"},
    bad_invocation{"--places cpu:x", "--places: expected cpu:N"},
    bad_invocation{"--places 2", "--places: expected cpu:N"},
    bad_invocation{"--steps 1", "CPU_NUM=0", "CPU_NUM=0"},
    bad_invocation{"--executor reference --places cpu:2", "--executor reference runs on one place"},
    bad_invocation{"--executor reference --threads 2", "configure the actor executor"},
    bad_invocation{"--executor reference --dot g.dot", "configure the actor executor"},
    bad_invocation{"--executor reference --sync wait", "configure the actor executor"},
    bad_invocation{"--executor reference --pin-places", "configure the actor executor"},
    bad_invocation{"--executor reference --actor-per-op", "configure the actor executor"},
    bad_invocation{"--executor reference --no-overlap-steps", "configure the actor executor"},
    bad_invocation{"--sync poll", "--sync: expected event or wait, got 'poll'"},
    bad_invocation{"--executor reference --trace t.json", "--executor reference has no actors"},
    bad_invocation{"--executor reference --check-hazards", "--executor reference has no actors"},
    bad_invocation{"--trace-steps 2:3", "give one of them"},
    bad_invocation{"--check-hazards --trace-steps 3:2", "the first step is after the last"},
    bad_invocation{"--check-hazards --trace-steps 0:2", "expected A:B with steps 1 <= A <= B"},
    bad_invocation{"--check-hazards --trace-steps 2", "expected A:B"},
    bad_invocation{"--check-hazards --trace-steps 1:x", "expected A:B"},
    bad_invocation{"--check-hazards --trace-steps -1:2", "expected A:B"},
    bad_invocation{"--steps 3 --check-hazards --trace-steps 4:5", "the run has only 3 steps"},
    bad_invocation{"--steps 1 --trace /nonexistent/t.json", "--trace /nonexistent/t.json"},
    bad_invocation{"--threads 0", "--threads must be positive"},
    bad_invocation{"--reduce sum", "--reduce"},
    bad_invocation{"--fuse-allreduce-mb -1", "--fuse-allreduce-mb"},
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

  // Without CPU_NUM the actor executor takes one place per core, and one scheduler thread.
  EXPECT_EQ(metrics.at("executor").get<std::string>(), "actor");
  EXPECT_EQ(metrics.at("places").get<int>(), cores());
  EXPECT_EQ(metrics.at("threads").get<int>(), 1);
  EXPECT_EQ(metrics.at("reduce").get<std::string>(), "allreduce");
  auto header = "on cpu:" + std::to_string(cores()) + " (";
  EXPECT_TRUE(r.out.starts_with("training mlp " + header)) << r.out;
  EXPECT_NE(r.out.find(", 1 thread, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trained 40 steps " + header), std::string::npos) << r.out;
}

/// The metrics of a run with `args` that must succeed.
nlohmann::json train(const std::string& args, const temp_dir& dir, const std::string& env = "") {
  auto metrics_path = dir.file("metrics.json");
  auto r = run(args + " --metrics " + metrics_path, dir, env);
  EXPECT_EQ(r.status, 0) << args << ": " << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  return read_json(metrics_path);
}

TEST(Cli, TwoPlacesTrainTheGlobalBatchLikeTheReferenceExecutor) {
  temp_dir dir("cli_two_places");
  auto two = train("--places cpu:2 --steps 30 --eval", dir);
  EXPECT_EQ(two.at("places").get<int>(), 2);
  EXPECT_EQ(two.at("config").at("places").get<std::string>(), "cpu:2");
  expect_falling(losses(two), 0.9);

  auto again = train("--places cpu:2 --steps 30 --eval", dir);
  EXPECT_EQ(losses(again), losses(two)) << "same seed, same places: the same losses";

  // Two places of 32 rows each compute the gradient of the 64-row mean: the reference
  // executor's steps, up to the order of float sums.
  auto reference = train("--executor reference --steps 30 --eval", dir);
  EXPECT_EQ(reference.at("executor").get<std::string>(), "reference");
  EXPECT_EQ(reference.at("places").get<int>(), 1);
  EXPECT_EQ(reference.at("threads").get<int>(), 1);
  auto expected = losses(reference), actual = losses(two);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-4 * expected[i]) << "step " << i + 1;
  // The test executor shares the trained parameters of the two places.
  auto reference_eval = reference.at("eval").at("loss").get<double>();
  EXPECT_NEAR(two.at("eval").at("loss").get<double>(), reference_eval, 1e-4 * reference_eval);
}

TEST(Cli, BothSyncStrategiesTrainTheSameSteps) {
  temp_dir dir("cli_sync");
  auto event = train("--places cpu:2 --steps 20 --sync event", dir);
  auto wait = train("--places cpu:2 --steps 20 --sync wait", dir);
  EXPECT_EQ(event.at("sync").get<std::string>(), "event");
  EXPECT_EQ(wait.at("config").at("sync").get<std::string>(), "wait");
  EXPECT_EQ(losses(event), losses(wait)) << "the strategy changes when ops wait, not what they compute";
  expect_falling(losses(wait), 0.9);
}

TEST(Cli, ThreePlacesTrainInReduceMode) {
  temp_dir dir("cli_reduce");
  auto metrics = train("--places cpu:3 --reduce reduce --steps 30", dir);
  EXPECT_EQ(metrics.at("places").get<int>(), 3);
  EXPECT_EQ(metrics.at("reduce").get<std::string>(), "reduce");
  expect_falling(losses(metrics), 0.9);
}

TEST(Cli, FusedAllReduceTrainsLikeUnfused) {
  temp_dir dir("cli_fused");
  // 0.01 MiB = 10485 bytes: the mlp's gradients fill several buckets.
  auto fused = train("--places cpu:2 --fuse-allreduce-mb 0.01 --steps 20", dir);
  EXPECT_EQ(fused.at("config").at("fuse_allreduce_mb").get<double>(), 0.01);
  expect_falling(losses(fused), 0.9);
  auto unfused = train("--places cpu:2 --steps 20", dir);
  auto expected = losses(unfused), actual = losses(fused);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-5 * expected[i]) << "step " << i + 1;
}

TEST(Cli, CpuNumSetsTheDefaultPlaces) {
  temp_dir dir("cli_cpu_num");
  auto three = train("--steps 2 --threads 1", dir, "CPU_NUM=3");
  EXPECT_EQ(three.at("places").get<int>(), 3);
  EXPECT_EQ(three.at("threads").get<int>(), 1);
  auto explicit_places = train("--steps 2 --places cpu:1", dir, "CPU_NUM=3");
  EXPECT_EQ(explicit_places.at("places").get<int>(), 1) << "--places wins over CPU_NUM";
  auto reference = train("--steps 2 --executor reference", dir, "CPU_NUM=3");
  EXPECT_EQ(reference.at("places").get<int>(), 1) << "reference runs on one place";
}

TEST(Cli, WritesTheSsaGraphAsDot) {
  temp_dir dir("cli_dot");
  auto dot = dir.file("graph.dot");
  auto r = run("--places cpu:2 --steps 2 --hidden 8 --dot " + dot, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  auto text = slurp(dot);
  EXPECT_TRUE(text.starts_with("digraph")) << text.substr(0, 100);
  EXPECT_NE(text.find("all_reduce"), std::string::npos) << "two places combine gradients";
}

TEST(Cli, ChecksHazardsOfRealRuns) {
  temp_dir dir("cli_hazards");
  auto metrics_path = dir.file("metrics.json");
  auto r = run("--places cpu:2 --steps 4 --check-hazards --metrics " + metrics_path, dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  std::smatch verdict;
  ASSERT_TRUE(std::regex_search(r.out, verdict,
                                std::regex("\nhazard check: 4 steps, (\\d+) firings, no violations\n")))
    << r.out;
  EXPECT_EQ(std::stoi(verdict[1]) % 4, 0) << "every op fires once per step";
  EXPECT_GT(std::stoi(verdict[1]), 4 * 20);
  auto metrics = read_json(metrics_path);
  EXPECT_EQ(metrics.at("hazards"), nlohmann::json({{"steps", 4}, {"violations", 0}}));
  EXPECT_FALSE(metrics.contains("trace")) << "no --trace, no trace file";
  EXPECT_EQ(metrics.at("config").at("check_hazards"), true);
  EXPECT_EQ(metrics.at("config").at("trace_steps"), "all");

  // Reduce mode on three places, a window of steps, and the trace written as well.
  auto trace = dir.file("t.json");
  r = run("--places cpu:3 --reduce reduce --steps 5 --trace-steps 2:3 --check-hazards --trace " +
            trace + " --metrics " + metrics_path, dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("hazard check: 2 steps, "), std::string::npos) << r.out;
  metrics = read_json(metrics_path);
  EXPECT_EQ(metrics.at("hazards"), nlohmann::json({{"steps", 2}, {"violations", 0}}));
  EXPECT_EQ(metrics.at("trace").at("file"), trace);
  EXPECT_GT(metrics.at("trace").at("events").get<int>(), 0);
  EXPECT_EQ(metrics.at("config").at("trace_steps"), "2:3");
  EXPECT_EQ(read_json(trace).at("otherData").at("places"),
            nlohmann::json({"cpu:0", "cpu:1", "cpu:2"}));
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
                     "/startup.pb --places cpu:2 --steps 30 --eval --metrics " + metrics_path,
                   dir);
  ASSERT_EQ(again.status, 0) << again.err;
  auto metrics = read_json(metrics_path);
  EXPECT_EQ(metrics.at("places").get<int>(), 2);
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

TEST(Cli, PinnedPlacesTrainTheSameSteps) {
  temp_dir dir("cli_pin");
  const std::string metrics = dir.file("pinned.json");
  auto pinned = run("--places cpu:3 --steps 20 --pin-places --metrics " + metrics, dir);
  ASSERT_EQ(pinned.status, 0) << pinned.err;
  EXPECT_NE(pinned.out.find("places pinned to cores"), std::string::npos) << pinned.out;
  auto loose = train("--places cpu:3 --steps 20", dir);
  EXPECT_EQ(losses(read_json(metrics)), losses(loose)) << "pinning moves threads, not what they compute";
  const std::string off_metrics = dir.file("off.json");
  auto off = run("--places cpu:3 --steps 20 --pin-places=off --metrics " + off_metrics, dir);
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_NE(off.out.find("places not pinned"), std::string::npos) << off.out;
  EXPECT_EQ(losses(read_json(off_metrics)), losses(loose));
  auto bad = run("--places cpu:2 --steps 2 --pin-places=sometimes", dir);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--pin-places: expected auto, on or off, got 'sometimes'"), std::string::npos) << bad.err;
}

TEST(Cli, WholeStepsTrainTheSameStepsAsOverlappedOnes) {
  temp_dir dir("cli_overlap");
  const std::string metrics = dir.file("whole.json");
  auto whole = run("--places cpu:2 --steps 20 --optimizer adam --no-overlap-steps --metrics " + metrics, dir);
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_NE(whole.out.find("steps not overlapped"), std::string::npos) << whole.out;
  auto overlapped = train("--places cpu:2 --steps 20 --optimizer adam", dir);
  EXPECT_EQ(losses(read_json(metrics)), losses(overlapped)) << "overlapping moves when steps start, not what they compute";
}

} // namespace
} // namespace pe

// Checkpoints: --save-params DIR (--save-every K) writes the persistables and
// DIR/checkpoint.json atomically; --load-params DIR resumes the run where it stopped.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "apps/run/checkpoint.hpp"
#include "data/batcher.hpp"
#include "idx_files.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::expect_error;
using testing::run_result;
using testing::slurp;
using testing::temp_dir;

/// `samples` samples whose image and label are both the sample's index.
dataset numbered(std::int64_t samples) {
  std::vector<float> images;
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < samples; ++i) {
    images.push_back(static_cast<float>(i));
    labels.push_back(i);
  }
  return dataset({{"image", tensor::from_vector(images, {samples, 1})},
                  {"label", tensor::from_vector(labels, {samples, 1})}});
}

std::vector<std::int64_t> labels_of(const dataset& batch) {
  auto v = batch.at("label").values<std::int64_t>();
  return {v.begin(), v.end()};
}

TEST(Batcher, AdvanceSkipsWhatNextWouldServe) {
  // 10 samples in batches of 3: 4 batches an epoch, the last of one sample, reshuffled.
  const dataset data = numbered(10);
  batcher reference(data, 3, 7);
  std::vector<std::vector<std::int64_t>> served;
  for (int i = 0; i < 13; ++i)
    served.push_back(labels_of(reference.next()));
  EXPECT_EQ(served[3].size(), 1u);
  EXPECT_NE(served[0], served[4]) << "each epoch is shuffled afresh";
  for (std::int64_t skip = 0; skip < 12; ++skip) {
    batcher resumed(data, 3, 7);
    resumed.advance(skip);
    EXPECT_EQ(resumed.served(), skip);
    EXPECT_EQ(labels_of(resumed.next()), served[static_cast<std::size_t>(skip)]) << skip;
    EXPECT_EQ(labels_of(resumed.next()), served[static_cast<std::size_t>(skip) + 1]) << skip;
    EXPECT_EQ(resumed.served(), skip + 2);
  }
}

param_map params(float value) {
  return {{"w", tensor::from_vector(std::vector<float>{value, value}, {2})},
          {"learning_rate_0", tensor::from_vector(std::vector<float>{0.5f}, {1})}};
}

checkpoint_record record_at(std::int64_t step) {
  return {step, step / 4, step % 4, {{"batch_size", 8}, {"seed", 1}}};
}

TEST(CheckpointFiles, WriteReadAndReplace) {
  temp_dir dir("checkpoint_files");
  const auto ckpt = dir.file("ckpt");
  EXPECT_FALSE(read_checkpoint(ckpt)) << "nothing there yet";
  write_checkpoint(ckpt, params(1), record_at(5));
  auto back = read_checkpoint(ckpt);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->step, 5);
  EXPECT_EQ(back->epochs_completed, 1);
  EXPECT_EQ(back->batches_into_epoch, 1);
  EXPECT_EQ(back->run, record_at(5).run);
  const auto first = slurp(dir.file("ckpt/w"));
  EXPECT_EQ(first, serialize_param(params(1).at("w")));

  // A second save replaces the first whole and leaves nothing beside it.
  write_checkpoint(ckpt, params(2), record_at(9));
  EXPECT_EQ(read_checkpoint(ckpt)->step, 9);
  EXPECT_EQ(slurp(dir.file("ckpt/w")), serialize_param(params(2).at("w")));
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir.path()))
    entries.push_back(e.path().filename().string());
  EXPECT_EQ(entries, std::vector<std::string>{"ckpt"});
}

TEST(CheckpointFiles, StrayFilesAreNeverReplaced) {
  temp_dir dir("checkpoint_stray");
  const auto ckpt = dir.file("ckpt");
  fs::create_directories(ckpt);
  testing::write_file(dir.file("ckpt/notes.txt"), "mine");
  expect_error([&] { check_checkpoint_target("--save-params", ckpt, {"w", "learning_rate_0"}); },
               {"--save-params " + ckpt + " holds notes.txt", "not a variable of this program"});
  expect_error([&] { write_checkpoint(ckpt, params(1), record_at(1)); }, {"holds notes.txt"});
  EXPECT_EQ(slurp(dir.file("ckpt/notes.txt")), "mine");
  EXPECT_FALSE(fs::exists(dir.file("ckpt/checkpoint.json")));
}

TEST(CheckpointFiles, UnreadableRecordIsAnError) {
  temp_dir dir("checkpoint_bad_record");
  testing::write_file(dir.file(checkpoint_file_name), "{\"step\": 3}");
  expect_error([&] { read_checkpoint(dir.path().string()); },
               {dir.file(checkpoint_file_name), "not a checkpoint record"});
}

TEST(CheckpointFiles, ResumeNeedsTheSameRun) {
  checkpoint_record saved = record_at(3);
  check_resumable(saved, saved.run, "ck"); // the same run resumes
  expect_error([&] { check_resumable(saved, {{"batch_size", 16}, {"seed", 1}}, "ck"); },
               {"--load-params ck: the checkpoint was written with --batch-size 8, this run has "
                "16"});
}

// The binary end to end.

run_result run(const std::string& args, const temp_dir& dir) {
  return testing::run_binary(pe::testing::pe_actor_run_binary(), args, dir.path());
}

std::vector<double> losses(const std::string& metrics_file, std::int64_t first_step) {
  const auto metrics = nlohmann::json::parse(slurp(metrics_file));
  std::vector<double> out;
  for (const auto& step : metrics.at("steps")) {
    EXPECT_EQ(step.at("step").get<std::int64_t>(), first_step + static_cast<std::int64_t>(out.size()));
    out.push_back(step.at("loss").get<double>());
  }
  return out;
}

/// A small MLP on one place, by default in batches of 1000 of the 8192 synthetic samples: 9
/// batches an epoch, so steps 10..12 are in the second, reshuffled epoch.
std::string small_run(const std::string& optimizer, const std::string& hidden = "8",
                      const std::string& batch_size = "1000") {
  return "--places cpu:1 --hidden " + hidden + " --batch-size " + batch_size + " --optimizer " +
         optimizer;
}

class CheckpointResume : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckpointResume, RestartedRunContinuesTheLossCurve) {
  temp_dir dir("checkpoint_resume_" + GetParam());
  // adam_reduce: 2 places in reduce mode, where each parameter's optimizer state changes on
  // its owner place only: the checkpoint must hold the owner's, not place 0's stale copy.
  const bool reduce = GetParam() == "adam_reduce";
  const auto setup = reduce ? "--places cpu:2 --reduce reduce --hidden 8 --batch-size 1000 --optimizer adam"
                            : small_run(GetParam());
  auto whole = run(setup + " --steps 12 --metrics " + dir.file("whole.json"), dir);
  ASSERT_EQ(whole.status, 0) << whole.err;

  const auto ckpt = dir.file("ckpt");
  auto first = run(setup + " --steps 6 --save-every 4 --save-params " + ckpt + " --metrics " +
                       dir.file("first.json"),
                   dir);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_TRUE(contains(first.out, "to " + ckpt + " (checkpoint at step 4)")) << first.out;
  EXPECT_TRUE(contains(first.out, "to " + ckpt + " (checkpoint at step 6)")) << first.out;
  const auto record = nlohmann::json::parse(slurp(ckpt + "/checkpoint.json"));
  EXPECT_EQ(record.at("step"), 6);
  EXPECT_EQ(record.at("data_position").at("batches_into_epoch"), 6);
  EXPECT_EQ(record.at("run").at("batch_size"), 1000);
  for (const auto& entry : fs::directory_iterator(ckpt)) // every persistable: Adam's too
    EXPECT_GT(fs::file_size(entry.path()), 0u) << entry.path();
  if (GetParam() != "sgd") {
    EXPECT_TRUE(fs::exists(ckpt + "/fc_0.w_0_moment1_0")) << "the optimizer state is saved";
    EXPECT_TRUE(fs::exists(ckpt + "/fc_0.w_0_beta1_pow_acc_0"));
  }

  auto resumed = run(setup + " --steps 12 --load-params " + ckpt + " --metrics " +
                         dir.file("resumed.json"),
                     dir);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.out, "(checkpoint at step 6, epoch 1 batch 7 next; every file's SHA-256 checked)")) << resumed.out;
  EXPECT_TRUE(contains(resumed.out, "step 7/12")) << resumed.out;
  EXPECT_FALSE(contains(resumed.out, "step 6/12")) << resumed.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir.file("resumed.json"))).at("resumed_from_step"), 6);

  const auto expected = losses(dir.file("whole.json"), 1);
  const auto before = losses(dir.file("first.json"), 1);
  const auto after = losses(dir.file("resumed.json"), 7);
  ASSERT_EQ(expected.size(), 12u);
  ASSERT_EQ(before.size(), 6u);
  ASSERT_EQ(after.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(before[i], expected[i]) << "step " << i + 1;
    EXPECT_EQ(after[i], expected[i + 6]) << "step " << i + 7;
  }
}

INSTANTIATE_TEST_SUITE_P(SgdAndAdam, CheckpointResume, ::testing::Values("sgd", "adam", "adam_reduce"));

TEST(CheckpointCli, RefusesAResumeOfAnotherRun) {
  temp_dir dir("checkpoint_refuse");
  const auto ckpt = dir.file("ckpt");
  const auto setup = small_run("sgd");
  ASSERT_EQ(run(setup + " --steps 2 --save-params " + ckpt, dir).status, 0);
  const std::pair<std::string, std::string> cases[] = {
    {small_run("sgd", "8", "500") + " --steps 4",
     "written with --batch-size 1000, this run has 500"},
    {setup + " --steps 4 --seed 2", "written with --seed 1, this run has 2"},
    {small_run("sgd", "16") + " --steps 4", "written with --hidden [8], this run has [16]"},
    {small_run("adam") + " --steps 4", "written with --optimizer sgd, this run has adam"},
    {setup + " --steps 2", "the checkpoint is at step 2, this run has 2 steps in all"},
  };
  for (const auto& [change, message] : cases) {
    auto r = run(change + " --load-params " + ckpt, dir);
    EXPECT_EQ(r.status, 2) << change;
    EXPECT_TRUE(contains(r.err, "--load-params " + ckpt + ": ")) << r.err;
    EXPECT_TRUE(contains(r.err, message)) << change << ": " << r.err;
    EXPECT_FALSE(contains(r.out, "step 1/")) << r.out;
  }
}

TEST(CheckpointCli, ParametersWithoutARecordStartFromStepOne) {
  temp_dir dir("checkpoint_plain");
  const auto ckpt = dir.file("ckpt");
  const auto setup = small_run("sgd");
  ASSERT_EQ(run(setup + " --steps 2 --save-params " + ckpt, dir).status, 0);
  fs::remove(ckpt + "/checkpoint.json");
  auto r = run(setup + " --steps 3 --load-params " + ckpt, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "loaded 5 variables from " + ckpt + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "step 1/3")) << r.out;
}

TEST(CheckpointCli, SaveFlagsAreChecked) {
  temp_dir dir("checkpoint_flags");
  auto r = run("--save-every 3", dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--save-every 3 needs --save-params DIR")) << r.err;
  r = run("--save-every 0 --save-params " + dir.file("p"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--save-every must be positive")) << r.err;

  // A directory holding something else is refused before training.
  fs::create_directories(dir.path() / "other");
  testing::write_file(dir.file("other/notes.txt"), "mine");
  r = run(small_run("sgd") + " --steps 2 --save-params " + dir.file("other"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--save-params " + dir.file("other") + " holds notes.txt")) << r.err;
  EXPECT_FALSE(contains(r.out, "step 1/")) << r.out;
  EXPECT_EQ(slurp(dir.file("other/notes.txt")), "mine");
}

} // namespace
} // namespace pe

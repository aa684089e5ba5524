// pe-actor-run --load-params, --save-params and --infer end to end: the real binary on the
// programs and parameter files Paddle wrote (tests/data/paddle_params).
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "data/npy.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/program_io.hpp"
#include "idx_files.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/paddle_fixtures.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::paddle_fixture;
using testing::run_result;
using testing::slurp;
using testing::temp_dir;

run_result run(const std::string& args, const temp_dir& dir) {
  return testing::run_binary(pe::testing::pe_actor_run_binary(), args, dir.path());
}

/// The error line of a run that must fail with status 2.
std::string failure(const run_result& r) {
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_TRUE(r.err.starts_with("pe-actor-run: error: ")) << r.err;
  return r.err;
}

/// 8 idx images of 4x4 pixels (width 16, what Paddle's fixture program takes) in `dir`.
std::string write_idx_data(const temp_dir& dir) {
  std::vector<std::uint8_t> pixels, labels;
  for (std::uint32_t i = 0; i < 8; ++i) {
    labels.push_back(static_cast<std::uint8_t>(i % 4));
    for (std::uint32_t p = 0; p < 16; ++p)
      pixels.push_back(static_cast<std::uint8_t>((i * 37 + p * 11) % 256));
  }
  const fs::path idx = dir.path() / "idx";
  fs::create_directories(idx);
  testing::write_file((idx / "train-images-idx3-ubyte").string(),
                      testing::idx_images(8, 4, 4, pixels));
  testing::write_file((idx / "train-labels-idx1-ubyte").string(), testing::idx_labels(labels));
  return " --data idx:" + idx.string();
}

/// --model and --startup of Paddle's training program.
std::string paddle_program() {
  return " --model " + paddle_fixture("main.pb") + " --startup " + paddle_fixture("startup.pb");
}

TEST(CliParams, HelpDescribesTheFlags) {
  temp_dir dir("cli_params_help");
  auto r = run("--help", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto* flag : {"--load-params PATH", "--save-params DIR", "--infer", "--params PATH",
                           "--output DIR", ".pdiparams"})
    EXPECT_TRUE(contains(r.out, flag)) << flag;
}

TEST(CliParams, RejectsFlagsThatDoNotFit) {
  temp_dir dir("cli_params_flags");
  EXPECT_TRUE(contains(failure(run("--params x", dir)), "--params and --output are for --infer"));
  EXPECT_TRUE(contains(failure(run("--infer --params x --output y --data npy:z", dir)),
                       "--infer needs --model PATH"));
  const std::string model = " --model " + paddle_fixture("model.pdmodel");
  EXPECT_TRUE(contains(failure(run("--infer --output y --data npy:z" + model, dir)),
                       "--infer needs --params PATH"));
  EXPECT_TRUE(contains(failure(run("--infer --params x --output y" + model, dir)),
                       "--infer reads its inputs from --data npy:DIR, got 'synthetic'"));
  EXPECT_TRUE(
      contains(failure(run("--infer --params x --output y --data npy:z --steps 3" + model, dir)),
               "--steps is for training, not --infer"));
  EXPECT_TRUE(contains(
      failure(run("--infer --params x --output y --data npy:z --startup s" + model, dir)),
      "--startup is for training, not --infer"));
}

TEST(CliParams, LoadsTrainsWithZeroRateAndSavesPaddlesBytes) {
  // Paddle's initial parameters with a learning rate of 0: training leaves them as they
  // were, so what --save-params writes is byte for byte what Paddle wrote.
  temp_dir dir("cli_params_round_trip");
  const std::string data = write_idx_data(dir);
  const fs::path params = dir.path() / "params";
  fs::copy(paddle_fixture("init"), params);
  write_param_file((params / "learning_rate_0").string(), tensor::zeros(dtype::fp32, {}));
  for (const std::string setup : {"--places cpu:1", "--places cpu:2", "--executor reference"}) {
    const fs::path saved = dir.path() / "saved" / std::to_string(std::hash<std::string>{}(setup));
    auto r = run(setup + paddle_program() + data + " --batch-size 4 --steps 2 --load-params " +
                     params.string() + " --save-params " + saved.string(),
                 dir);
    ASSERT_EQ(r.status, 0) << setup << ": " << r.err;
    EXPECT_TRUE(contains(r.out, "loaded 5 variables from " + params.string())) << r.out;
    EXPECT_TRUE(contains(r.out, "saved 5 variables to " + saved.string())) << r.out;
    for (const auto* name : {"fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"})
      EXPECT_EQ(slurp((saved / name).string()), slurp(paddle_fixture(std::string("init/") + name)))
          << setup << ": " << name;
    EXPECT_EQ(slurp((saved / "learning_rate_0").string()),
              slurp((params / "learning_rate_0").string()));
  }
}

TEST(CliParams, TrainedParametersDifferFromTheLoadedOnes) {
  temp_dir dir("cli_params_trained");
  const fs::path saved = dir.path() / "saved";
  auto r = run("--places cpu:2" + paddle_program() + write_idx_data(dir) +
                   " --batch-size 4 --steps 3 --load-params " + paddle_fixture("model.pdiparams") +
                   " --save-params " + saved.string(),
               dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "loaded 4 variables")) << r.out;
  // Trained with Paddle's rate 0.1 from its startup: same format, other values.
  const auto w = slurp((saved / "fc_0.w_0").string());
  EXPECT_EQ(w.size(), slurp(paddle_fixture("init/fc_0.w_0")).size());
  EXPECT_NE(w, slurp(paddle_fixture("init/fc_0.w_0")));
}

TEST(CliParams, SaveParamsDirIsCheckedBeforeTraining) {
  temp_dir dir("cli_params_unwritable");
  testing::write_file(dir.file("blocker"), "");
  auto r = run("--steps 1 --hidden 4 --save-params " + dir.file("blocker") + "/params", dir);
  EXPECT_TRUE(contains(failure(r), "--save-params " + dir.file("blocker") +
                                       "/params: cannot create the directory"))
      << r.err;
  EXPECT_FALSE(contains(r.out, "step 1")) << r.out;
}

TEST(CliParams, BadParameterFilesFailNamingFileAndVariable) {
  temp_dir dir("cli_params_bad");
  const fs::path params = dir.path() / "params";
  fs::copy(paddle_fixture("init"), params);
  write_param_file((params / "fc_1.b_0").string(), tensor::zeros(dtype::fp32, {3}));
  auto r = run(paddle_program() + write_idx_data(dir) + " --steps 1 --load-params " +
                   params.string(),
               dir);
  EXPECT_TRUE(contains(failure(r), (params / "fc_1.b_0").string() +
                                       ": variable 'fc_1.b_0': holds FP32 [3] but the program "
                                       "declares FP32 [10]"))
      << r.err;
}

/// The fixture's inference input as DIR/image.npy.
std::string write_inputs(const temp_dir& dir) {
  const fs::path in = dir.path() / "in";
  fs::create_directories(in);
  fs::copy_file(paddle_fixture("input.npy"), in / "image.npy");
  return in.string();
}

void expect_near(const tensor& ours, const tensor& theirs, const std::string& what) {
  ASSERT_EQ(ours.shape(), theirs.shape()) << what;
  auto a = ours.values<float>();
  auto b = theirs.values<float>();
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-5) << what << " [" << i << "]";
}

TEST(CliParams, InferenceMatchesPaddle) {
  temp_dir dir("cli_params_infer");
  const std::string in = write_inputs(dir);
  // 5 rows in batches of 2: the last is partial, and on two places one place gets no row.
  for (const std::string setup : {"--places cpu:1", "--places cpu:2", "--executor reference"}) {
    const fs::path out = dir.path() / "out" / std::to_string(std::hash<std::string>{}(setup));
    auto r = run(setup + " --infer --model " + paddle_fixture("model.pdmodel") + " --params " +
                     paddle_fixture("model.pdiparams") + " --data npy:" + in +
                     " --batch-size 2 --output " + out.string(),
                 dir);
    ASSERT_EQ(r.status, 0) << setup << ": " << r.err;
    EXPECT_TRUE(contains(r.out, "inferred 5 rows in 3 batches")) << r.out;
    // The fetch ops' targets in col order: the logits, then the softmax.
    expect_near(read_npy((out / "save_infer_model/scale_0.tmp_0.npy").string()),
                read_npy(paddle_fixture("output_0.npy")), setup + " logits");
    expect_near(read_npy((out / "save_infer_model/scale_1.tmp_0.npy").string()),
                read_npy(paddle_fixture("output_1.npy")), setup + " softmax");
  }
}

TEST(CliParams, EncoderInferenceMatchesPaddle) {
  // The BERT-style classifier's inference model (tests/data/paddle_encoder_classifier/infer,
  // scripts/make_paddle_encoder_fixture.py): position ids computed in the program, two
  // transformer encoder layers, the first token's logits, on 16 sentences fed as input_ids.
  temp_dir dir("cli_params_encoder_infer");
  const std::string model = testing::paddle_training_fixture("encoder_classifier") + "/infer";
  for (const std::string setup : {"--places cpu:1 --batch-size 16", "--places cpu:2 --batch-size 5"}) {
    const fs::path out = dir.path() / "out" / std::to_string(std::hash<std::string>{}(setup));
    auto r = run(setup + " --infer --model " + model + "/model.pdmodel --params " + model +
                     "/model.pdiparams --data npy:" + model + " --output " + out.string(),
                 dir);
    ASSERT_EQ(r.status, 0) << setup << ": " << r.err;
    EXPECT_TRUE(contains(r.out, "inferred 16 rows")) << r.out;
    expect_near(read_npy((out / "save_infer_model/scale_0.tmp_0.npy").string()),
                read_npy(model + "/output_0.npy"), setup + " logits");
  }
}

TEST(CliParams, SlicesWithTensorBoundsMatchPaddle) {
  // tests/data/paddle_slice_tensor_bounds (scripts/make_paddle_slice_fixture.py): x[j:, :, 1:3]
  // with j a variable (StartsTensorList) and paddle.slice with a variable end
  // (EndsTensorList). One place: the slice is along the batch axis, which places split.
  temp_dir dir("cli_params_slice_bounds");
  const std::string model = testing::paddle_training_fixture("slice_tensor_bounds");
  const fs::path out = dir.path() / "out";
  auto r = run("--places cpu:1 --infer --model " + model + "/model.pdmodel --params " + model +
                   "/model.pdiparams --data npy:" + model + " --output " + out.string(),
               dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const tensor got = read_npy((out / "save_infer_model/scale_0.tmp_0.npy").string());
  const tensor want = read_npy(model + "/output_0.npy");
  ASSERT_EQ(got.shape(), want.shape());
  for (std::int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
}

TEST(CliParams, InferenceRejectsMissingAndMisfitInputs) {
  temp_dir dir("cli_params_infer_bad");
  const fs::path in = dir.path() / "in";
  fs::create_directories(in);
  const std::string without_params = " --infer --model " + paddle_fixture("model.pdmodel") +
                                     " --data npy:" + in.string() + " --output " + dir.file("out");
  const std::string args = without_params + " --params " + paddle_fixture("model.pdiparams");
  EXPECT_TRUE(contains(failure(run(args, dir)),
                       "missing " + (in / "image.npy").string() + " for feed 'image'"));
  write_npy((in / "image.npy").string(), tensor::zeros(dtype::fp64, {5, 16}));
  EXPECT_TRUE(contains(failure(run(args, dir)),
                       (in / "image.npy").string() +
                           ": feed 'image' is FP64, the model declares FP32"));
  write_npy((in / "image.npy").string(), tensor::zeros(dtype::fp32, {5, 3}));
  EXPECT_TRUE(contains(failure(run(args, dir)), (in / "image.npy").string() +
                                                    ": feed 'image' has shape [5, 3], the model "
                                                    "declares [-1, 16]"));
  write_npy((in / "image.npy").string(), tensor::zeros(dtype::fp32, {5, 16}));
  EXPECT_TRUE(contains(failure(run(without_params + " --params " + paddle_fixture("init.combined"), dir)),
                       "init.combined: holds 5 variables; expected 4 ('fc_0.b_0', 'fc_0.w_0', "
                       "'fc_1.b_0', 'fc_1.w_0')\n"));
}

} // namespace
} // namespace pe

// pe-actor-run's data sources end to end: --data npy:DIR trains as idx:DIR does on the same
// arrays, its files are checked against the program's feeds, and idx images feed a rank-4
// image variable.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/npy.hpp"
#include "graph/backward.hpp"
#include "graph/builder.hpp"
#include "graph/optimizer.hpp"
#include "graph/program_io.hpp"
#include "idx_files.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::run_result;
using testing::slurp;
using testing::temp_dir;
using testing::write_file;

constexpr std::int64_t samples = 40, test_samples = 12, side = 4;

run_result run(const std::string& args, const temp_dir& dir) {
  return testing::run_binary(pe::testing::pe_actor_run_binary(), args, dir.path());
}

/// The losses of a run's --metrics file.
std::vector<double> losses(const std::string& metrics_path) {
  std::vector<double> out;
  auto metrics = nlohmann::json::parse(slurp(metrics_path));
  for (const auto& step : metrics.at("steps"))
    out.push_back(step.at("loss").get<double>());
  return out;
}

/// Deterministic pixels and labels for `count` side x side images, different per `salt`.
struct arrays {
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint8_t> labels;

  arrays(std::int64_t count, unsigned salt) {
    for (std::int64_t i = 0; i < count; ++i) {
      labels.push_back(static_cast<std::uint8_t>((i * 7 + salt) % 10));
      for (std::int64_t p = 0; p < side * side; ++p)
        pixels.push_back(static_cast<std::uint8_t>((i * 37 + p * 11 + salt + labels.back() * 20) % 256));
    }
  }

  std::int64_t count() const { return static_cast<std::int64_t>(labels.size()); }

  /// FP32 pixels (0..255, as idx without --normalize) with rows of `row_shape`.
  tensor images(const shape_t& row_shape) const {
    shape_t shape{count()};
    shape.insert(shape.end(), row_shape.begin(), row_shape.end());
    return tensor::from_vector(std::vector<float>(pixels.begin(), pixels.end()), shape);
  }

  tensor int64_labels() const {
    return tensor::from_vector(std::vector<std::int64_t>(labels.begin(), labels.end()),
                               {count(), 1});
  }
};

const arrays train_set(samples, 0), test_set(test_samples, 3);

/// DIR/train-* and DIR/t10k-* idx files of train_set and test_set.
void write_idx(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  auto n = [](const arrays& a) { return static_cast<std::uint32_t>(a.count()); };
  write_file((dir / "train-images-idx3-ubyte").string(),
             testing::idx_images(n(train_set), side, side, train_set.pixels));
  write_file((dir / "train-labels-idx1-ubyte").string(), testing::idx_labels(train_set.labels));
  write_file((dir / "t10k-images-idx3-ubyte").string(),
             testing::idx_images(n(test_set), side, side, test_set.pixels));
  write_file((dir / "t10k-labels-idx1-ubyte").string(), testing::idx_labels(test_set.labels));
}

/// DIR/image.npy, DIR/label.npy and DIR/test/ the same, of train_set and test_set, with image
/// rows of `row_shape`.
void write_npy_dir(const std::filesystem::path& dir, const shape_t& row_shape) {
  std::filesystem::create_directories(dir / "test");
  write_npy((dir / "image.npy").string(), train_set.images(row_shape));
  write_npy((dir / "label.npy").string(), train_set.int64_labels());
  write_npy((dir / "test" / "image.npy").string(), test_set.images(row_shape));
  write_npy((dir / "test" / "label.npy").string(), test_set.int64_labels());
}

/// DIR/main.pb and DIR/startup.pb: softmax regression on an image feed `image` of `dims`,
/// trained by sgd, with an accuracy op.
void write_classifier(const std::filesystem::path& dir, const shape_t& image_dims) {
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  auto image = b.data("image", image_dims, dtype::fp32);
  auto label = b.data("label", {-1, 1}, dtype::int64);
  auto [softmax, loss] = b.softmax_with_cross_entropy(b.fc(image, 10, ""), label);
  auto mean_loss = b.mean(loss);
  b.accuracy(softmax, label);
  optimizer_config sgd;
  sgd.learning_rate = 0.001f;
  append_optimizer(b, sgd, append_backward(main, mean_loss));
  std::filesystem::create_directories(dir);
  save_program(main, (dir / "main.pb").string(), program_format::binary);
  save_program(startup, (dir / "startup.pb").string(), program_format::binary);
}

const std::string common = " --steps 8 --batch-size 16 --places cpu:2 --eval --metrics ";

TEST(CliData, NpyTrainsExactlyAsIdxOnTheSameArrays) {
  temp_dir dir("cli_data_npy_vs_idx");
  write_idx(dir.path() / "idx");
  write_npy_dir(dir.path() / "npy", {side * side});
  auto idx = run("--data idx:" + dir.file("idx") + " --hidden 8 --lr 0.001" + common + dir.file("idx.json"),
                 dir);
  ASSERT_EQ(idx.status, 0) << idx.err;
  auto npy = run("--data npy:" + dir.file("npy") + " --hidden 8 --lr 0.001" + common + dir.file("npy.json"),
                 dir);
  ASSERT_EQ(npy.status, 0) << npy.err;
  auto idx_losses = losses(dir.file("idx.json"));
  ASSERT_EQ(idx_losses.size(), 8u);
  EXPECT_EQ(losses(dir.file("npy.json")), idx_losses);
  auto eval_of = [&](const std::string& name) {
    return nlohmann::json::parse(slurp(dir.file(name))).at("eval");
  };
  EXPECT_EQ(eval_of("npy.json"), eval_of("idx.json"));
  EXPECT_EQ(eval_of("npy.json").at("samples"), test_samples);
}

TEST(CliData, NpyFilesAreCheckedAgainstTheFeeds) {
  temp_dir dir("cli_data_npy_errors");
  auto data = dir.path() / "npy";
  write_npy_dir(data, {side * side});
  auto train = [&](const std::string& extra = "") {
    return run("--steps 2 --data npy:" + data.string() + extra, dir);
  };
  auto expect_failure = [&](const run_result& r, const std::vector<std::string>& parts) {
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_TRUE(r.err.starts_with("pe-actor-run: error: ")) << r.err;
    for (const auto& part : parts)
      EXPECT_NE(r.err.find(part), std::string::npos) << "'" << r.err << "' lacks '" << part << "'";
  };
  auto label = (data / "label.npy").string();

  std::filesystem::remove(label);
  expect_failure(train(), {"missing " + label, "feed 'label'"});

  write_npy(label, tensor::from_vector(std::vector<std::int32_t>(samples, 1), {samples, 1}));
  expect_failure(train(), {label, "feed 'label' is INT32, the program declares INT64"});

  write_npy(label, tensor::zeros(dtype::int64, {samples - 1, 1}));
  expect_failure(train(), {(data / "image.npy").string() + " has 40 rows but " + label +
                           " has 39"});

  write_npy(label, tensor::zeros(dtype::int64, {samples, 2}));
  expect_failure(train(), {label, "feed 'label' has rows of shape [2] (width 2), the program declares "
                           "[-1, 1] (width 1)"});

  write_npy(label, train_set.int64_labels());
  auto test_label = (data / "test" / "label.npy").string();
  std::filesystem::remove(test_label);
  expect_failure(train(" --eval"), {"missing " + test_label});

  expect_failure(run("--data npy:" + dir.file("absent"), dir), {dir.file("absent")});
  expect_failure(run("--data npy:", dir), {"npy:DIR"});
}

TEST(CliData, IdxImagesFeedARank4ImageVariable) {
  temp_dir dir("cli_data_rank4");
  write_idx(dir.path() / "idx");
  write_classifier(dir.path() / "flat", {-1, side * side});
  write_classifier(dir.path() / "rank4", {-1, 1, side, side});
  auto train = [&](const std::string& model, const std::string& data) {
    return run("--model " + dir.file(model + "/main.pb") + " --startup " +
                 dir.file(model + "/startup.pb") + " --data " + data + common +
                 dir.file(model + ".json"),
               dir);
  };
  auto flat = train("flat", "idx:" + dir.file("idx"));
  ASSERT_EQ(flat.status, 0) << flat.err;
  auto rank4 = train("rank4", "idx:" + dir.file("idx"));
  ASSERT_EQ(rank4.status, 0) << rank4.err;
  // The same weights (one fc of [16, 10] from the same seed) on the same pixels.
  ASSERT_EQ(losses(dir.file("flat.json")).size(), 8u);
  EXPECT_EQ(losses(dir.file("rank4.json")), losses(dir.file("flat.json")));

  // npy rows must have the declared shape: [1, 4, 4] trains, [16] is refused.
  write_npy_dir(dir.path() / "npy4", {1, side, side});
  auto npy4 = train("rank4", "npy:" + dir.file("npy4"));
  ASSERT_EQ(npy4.status, 0) << npy4.err;
  EXPECT_EQ(losses(dir.file("rank4.json")), losses(dir.file("flat.json")));
  write_npy_dir(dir.path() / "npy16", {side * side});
  auto refused = train("rank4", "npy:" + dir.file("npy16"));
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find(dir.file("npy16/image.npy") +
                             ": feed 'image' has rows of shape [16] (width 16), the program "
                             "declares [-1, 1, 4, 4] (width 16)"),
            std::string::npos)
    << refused.err;

  // idx images whose pixel count differs from the declared rows are refused.
  write_classifier(dir.path() / "rank4_wide", {-1, 1, 5, 5});
  auto wide = train("rank4_wide", "idx:" + dir.file("idx"));
  EXPECT_EQ(wide.status, 2);
  EXPECT_NE(wide.err.find("feed 'image' has rows of shape [16] (width 16), the program "
                          "declares [-1, 1, 5, 5] (width 25)"),
            std::string::npos)
    << wide.err;
}

} // namespace
} // namespace pe

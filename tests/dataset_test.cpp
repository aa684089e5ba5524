// The data side of pe-actor-run: idx files (plain and gzip), the synthetic data set and
// the batcher.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "data/batcher.hpp"
#include "data/dataset.hpp"
#include "data/idx.hpp"
#include "data/synthetic.hpp"
#include "idx_files.hpp"
#include "tests/support/expect_error.hpp"

namespace pe {
namespace {

using testing::expect_error;
using testing::idx_images;
using testing::idx_labels;
using testing::temp_dir;
using testing::write_file;

// Three 2x3 images whose pixels are distinct: image i, pixel j = 10 * i + j (+ 200 for the
// last image, to exercise values above 127).
const std::vector<std::uint8_t> pixels = {0,  1,  2,  3,  4,  5,  10,  11,  12,
                                          13, 14, 15, 220, 221, 222, 223, 224, 255};
const std::vector<std::uint8_t> labels = {7, 0, 9};


class IdxFiles : public ::testing::TestWithParam<bool> {}; // param: gzip

TEST_P(IdxFiles, RoundTripsImagesAndLabels) {
  temp_dir dir("idx_round_trip");
  auto images_path = dir.file("images"), labels_path = dir.file("labels");
  write_file(images_path, idx_images(3, 2, 3, pixels), GetParam());
  write_file(labels_path, idx_labels(labels), GetParam());

  auto images = read_idx_images(images_path, false);
  EXPECT_EQ(images.type(), dtype::fp32);
  EXPECT_EQ(images.shape(), (shape_t{3, 6}));
  auto values = images.values<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()),
            std::vector<float>(pixels.begin(), pixels.end()));

  auto normalized_images = read_idx_images(images_path, true);
  auto normalized = normalized_images.values<float>();
  EXPECT_FLOAT_EQ(normalized[17], 1.f);
  EXPECT_FLOAT_EQ(normalized[3], 3.f / 255.f);

  auto read_labels = read_idx_labels(labels_path);
  EXPECT_EQ(read_labels.type(), dtype::int64);
  EXPECT_EQ(read_labels.shape(), (shape_t{3, 1}));
  auto label_values = read_labels.values<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(label_values.begin(), label_values.end()),
            (std::vector<std::int64_t>{7, 0, 9}));
}

TEST_P(IdxFiles, TruncatedPixelsNameTheFile) {
  temp_dir dir("idx_truncated");
  auto path = dir.file("train-images-idx3-ubyte");
  auto bytes = idx_images(3, 2, 3, pixels);
  write_file(path, bytes.substr(0, bytes.size() - 1), GetParam());
  expect_error([&] { read_idx_images(path, false); }, {path, "truncated"});
}

TEST_P(IdxFiles, TruncatedHeaderNamesTheFile) {
  temp_dir dir("idx_truncated_header");
  auto path = dir.file("labels");
  write_file(path, idx_labels(labels).substr(0, 6), GetParam());
  expect_error([&] { read_idx_labels(path); }, {path, "truncated"});
}

TEST_P(IdxFiles, WrongMagicNamesTheFile) {
  temp_dir dir("idx_magic");
  auto path = dir.file("labels-given-as-images");
  write_file(path, idx_labels(labels), GetParam());
  expect_error([&] { read_idx_images(path, false); }, {path, "magic", "0x00000801"});
  write_file(path, idx_images(3, 2, 3, pixels), GetParam());
  expect_error([&] { read_idx_labels(path); }, {path, "magic", "0x00000803"});
}

INSTANTIATE_TEST_SUITE_P(PlainAndGzip, IdxFiles, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "gzip" : "plain"; });

TEST(IdxDir, LoadsTrainingAndTestSetsInEitherForm) {
  temp_dir dir("idx_dir");
  write_file(dir.file("train-images-idx3-ubyte"), idx_images(3, 2, 3, pixels));
  write_file(dir.file("train-labels-idx1-ubyte.gz"), idx_labels(labels), true);
  auto train_only = load_data("idx:" + dir.path().string(), 1, false);
  EXPECT_EQ(train_only.train.size(), 3);
  EXPECT_EQ(train_only.train.width(), 6);
  EXPECT_FALSE(train_only.test.has_value());

  write_file(dir.file("t10k-images-idx3-ubyte.gz"), idx_images(1, 2, 3, {9, 8, 7, 6, 5, 4}), true);
  write_file(dir.file("t10k-labels-idx1-ubyte"), idx_labels({4}));
  auto both = load_idx_dir(dir.path().string(), true);
  ASSERT_TRUE(both.test.has_value());
  EXPECT_EQ(both.test->size(), 1);
  EXPECT_FLOAT_EQ(both.test->images.values<float>()[0], 9.f / 255.f);
  EXPECT_EQ(both.test->labels.values<std::int64_t>()[0], 4);
}

TEST(IdxDir, ReportsMissingAndMismatchedFiles) {
  temp_dir dir("idx_dir_errors");
  expect_error([&] { load_idx_dir(dir.path().string(), false); }, {"train-images-idx3-ubyte"});

  write_file(dir.file("train-images-idx3-ubyte"), idx_images(3, 2, 3, pixels));
  write_file(dir.file("train-labels-idx1-ubyte"), idx_labels({1, 2}));
  expect_error([&] { load_idx_dir(dir.path().string(), false); }, {"3 images", "2 labels"});

  write_file(dir.file("train-labels-idx1-ubyte"), idx_labels(labels));
  write_file(dir.file("t10k-images-idx3-ubyte"), idx_images(3, 2, 3, pixels));
  expect_error([&] { load_idx_dir(dir.path().string(), false); }, {"t10k", "labels"});

  expect_error([&] { load_data("idx:" + dir.file("absent"), 1, false); }, {"absent"});
  expect_error([&] { load_data("mnist", 1, false); }, {"mnist"});
}

std::vector<float> floats(const tensor& t) {
  auto v = t.values<float>();
  return {v.begin(), v.end()};
}

TEST(Synthetic, IsDeterminedBySeed) {
  synthetic_config small{.seed = 5, .width = 16, .classes = 4, .train_size = 64, .test_size = 32};
  auto a = make_synthetic(small), b = make_synthetic(small);
  EXPECT_EQ(a.train.images.shape(), (shape_t{64, 16}));
  EXPECT_EQ(a.train.labels.shape(), (shape_t{64, 1}));
  ASSERT_TRUE(a.test.has_value());
  EXPECT_EQ(a.test->size(), 32);
  EXPECT_EQ(floats(a.train.images), floats(b.train.images));
  EXPECT_EQ(floats(a.test->images), floats(b.test->images));

  std::set<std::int64_t> seen;
  for (auto label : a.train.labels.values<std::int64_t>()) {
    EXPECT_GE(label, 0);
    EXPECT_LT(label, 4);
    seen.insert(label);
  }
  EXPECT_EQ(seen.size(), 4u);

  small.seed = 6;
  EXPECT_NE(floats(make_synthetic(small).train.images), floats(a.train.images));
}

TEST(Synthetic, DefaultMatchesTheMlpInput) {
  auto data = load_data("synthetic", 1, false);
  EXPECT_EQ(data.train.size(), 8192);
  EXPECT_EQ(data.train.width(), 784);
  ASSERT_TRUE(data.test.has_value());
  EXPECT_EQ(data.test->size(), 2048);
}

/// `n` samples whose single feature is their index, labelled index % 3.
dataset numbered(std::int64_t n) {
  std::vector<float> images;
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < n; ++i) {
    images.push_back(static_cast<float>(i));
    labels.push_back(i % 3);
  }
  return {tensor::from_vector(images, {n, 1}), tensor::from_vector(labels, {n, 1})};
}

TEST(Batcher, VisitsEverySampleOncePerEpochKeepingThePartialBatch) {
  auto data = numbered(10);
  batcher batches(data, 4, 7);
  EXPECT_EQ(batches.batches_per_epoch(), 3);
  std::vector<std::vector<float>> epochs(2);
  for (auto& epoch : epochs) {
    for (std::int64_t expected_rows : {4, 4, 2}) {
      auto batch = batches.next();
      ASSERT_EQ(batch.size(), expected_rows);
      ASSERT_EQ(batch.labels.shape(), (shape_t{expected_rows, 1}));
      for (std::int64_t i = 0; i < expected_rows; ++i) {
        auto sample = batch.images.values<float>()[i];
        EXPECT_EQ(batch.labels.values<std::int64_t>()[i], static_cast<std::int64_t>(sample) % 3);
        epoch.push_back(sample);
      }
    }
  }
  for (auto epoch : epochs) {
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, floats(data.images));
  }
  EXPECT_NE(epochs[0], epochs[1]) << "each epoch is reshuffled";
  EXPECT_NE(epochs[0], floats(data.images)) << "the order is shuffled";
  EXPECT_EQ(batches.next().size(), 4) << "the third epoch starts with a full batch";
}

TEST(Batcher, OrderIsDeterminedBySeed) {
  auto data = numbered(10);
  batcher a(data, 10, 3), b(data, 10, 3), c(data, 10, 4);
  auto first = floats(a.next().images);
  EXPECT_EQ(first, floats(b.next().images));
  EXPECT_NE(first, floats(c.next().images));
}

TEST(Batcher, WithoutShufflingEveryEpochServesTheDataInOrder) {
  auto data = numbered(10);
  batcher batches(data, 4, 3, /*shuffle=*/false);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<float> served;
    for (int b = 0; b < 3; ++b)
      for (float v : floats(batches.next().images)) served.push_back(v);
    EXPECT_EQ(served, floats(data.images)) << "epoch " << epoch;
  }
  // A process's rows of a batch are the contiguous rows Paddle's feed split gives a place.
  EXPECT_EQ(floats(batches.next(2, 2).images), (std::vector<float>{2, 3}));
}

} // namespace
} // namespace pe

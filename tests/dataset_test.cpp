// The data side of pe-actor-run: data sets of named feeds, idx files (plain and gzip), the
// synthetic data set and the batcher.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "data/batcher.hpp"
#include "data/dataset.hpp"
#include "data/idx.hpp"
#include "data/npy.hpp"
#include "data/npy_dir.hpp"
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
  EXPECT_EQ(train_only.train.width("image"), 6);
  EXPECT_FALSE(train_only.test.has_value());

  write_file(dir.file("t10k-images-idx3-ubyte.gz"), idx_images(1, 2, 3, {9, 8, 7, 6, 5, 4}), true);
  write_file(dir.file("t10k-labels-idx1-ubyte"), idx_labels({4}));
  auto both = load_idx_dir(dir.path().string(), true);
  ASSERT_TRUE(both.test.has_value());
  EXPECT_EQ(both.test->size(), 1);
  EXPECT_FLOAT_EQ(both.test->at("image").values<float>()[0], 9.f / 255.f);
  EXPECT_EQ(both.test->at("label").values<std::int64_t>()[0], 4);
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
  EXPECT_EQ(a.train.at("image").shape(), (shape_t{64, 16}));
  EXPECT_EQ(a.train.at("label").shape(), (shape_t{64, 1}));
  ASSERT_TRUE(a.test.has_value());
  EXPECT_EQ(a.test->size(), 32);
  EXPECT_EQ(floats(a.train.at("image")), floats(b.train.at("image")));
  EXPECT_EQ(floats(a.test->at("image")), floats(b.test->at("image")));

  std::set<std::int64_t> seen;
  for (auto label : a.train.at("label").values<std::int64_t>()) {
    EXPECT_GE(label, 0);
    EXPECT_LT(label, 4);
    seen.insert(label);
  }
  EXPECT_EQ(seen.size(), 4u);

  small.seed = 6;
  EXPECT_NE(floats(make_synthetic(small).train.at("image")), floats(a.train.at("image")));
}

TEST(Synthetic, DefaultMatchesTheMlpInput) {
  auto data = load_data("synthetic", 1, false);
  EXPECT_EQ(data.train.size(), 8192);
  EXPECT_EQ(data.train.width("image"), 784);
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
  return dataset({{"image", tensor::from_vector(images, {n, 1})},
                  {"label", tensor::from_vector(labels, {n, 1})}});
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
      ASSERT_EQ(batch.at("label").shape(), (shape_t{expected_rows, 1}));
      for (std::int64_t i = 0; i < expected_rows; ++i) {
        auto sample = batch.at("image").values<float>()[i];
        EXPECT_EQ(batch.at("label").values<std::int64_t>()[i], static_cast<std::int64_t>(sample) % 3);
        epoch.push_back(sample);
      }
    }
  }
  for (auto epoch : epochs) {
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, floats(data.at("image")));
  }
  EXPECT_NE(epochs[0], epochs[1]) << "each epoch is reshuffled";
  EXPECT_NE(epochs[0], floats(data.at("image"))) << "the order is shuffled";
  EXPECT_EQ(batches.next().size(), 4) << "the third epoch starts with a full batch";
}

TEST(Batcher, OrderIsDeterminedBySeed) {
  auto data = numbered(10);
  batcher a(data, 10, 3), b(data, 10, 3), c(data, 10, 4);
  auto first = floats(a.next().at("image"));
  EXPECT_EQ(first, floats(b.next().at("image")));
  EXPECT_NE(first, floats(c.next().at("image")));
}

TEST(Batcher, WithoutShufflingEveryEpochServesTheDataInOrder) {
  auto data = numbered(10);
  batcher batches(data, 4, 3, /*shuffle=*/false);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<float> served;
    for (int b = 0; b < 3; ++b)
      for (float v : floats(batches.next().at("image"))) served.push_back(v);
    EXPECT_EQ(served, floats(data.at("image"))) << "epoch " << epoch;
  }
  // A process's rows of a batch are the contiguous rows Paddle's feed split gives a place.
  EXPECT_EQ(floats(batches.next(2, 2).at("image")), (std::vector<float>{2, 3}));
}


/// Five feeds of `n` samples, each a function of the sample's index i, of every dtype the
/// engine runs: x FP32 [n, 2] (i, -i), ids INT32 [n, 3] (10 i + k), flag BOOL [n, 1]
/// (i odd), byte UINT8 [n, 1] (i), label INT64 [n, 1] (i % 3).
dataset mixed(std::int64_t n) {
  std::vector<float> x;
  std::vector<std::int32_t> ids;
  std::vector<bool> flags;
  std::vector<std::uint8_t> bytes;
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < n; ++i) {
    x.insert(x.end(), {static_cast<float>(i), -static_cast<float>(i)});
    for (int k = 0; k < 3; ++k) ids.push_back(static_cast<std::int32_t>(10 * i + k));
    flags.push_back(i % 2 == 1);
    bytes.push_back(static_cast<std::uint8_t>(i));
    labels.push_back(i % 3);
  }
  tensor flag(dtype::boolean, {n, 1});
  for (std::int64_t i = 0; i < n; ++i) flag.values<bool>()[i] = flags[static_cast<std::size_t>(i)];
  return dataset({{"x", tensor::from_vector(x, {n, 2})},
                  {"ids", tensor::from_vector(ids, {n, 3})},
                  {"flag", std::move(flag)},
                  {"byte", tensor::from_vector(bytes, {n, 1})},
                  {"label", tensor::from_vector(labels, {n, 1})}});
}

/// Checks that every row of `batch` is one sample of mixed(): each feed's row belongs to the
/// sample x's first element names. Returns the samples in batch order.
std::vector<std::int64_t> samples_of(const dataset& batch) {
  std::vector<std::int64_t> samples;
  for (std::int64_t r = 0; r < batch.size(); ++r) {
    const auto i = static_cast<std::int64_t>(batch.at("x").values<float>()[2 * r]);
    EXPECT_EQ(batch.at("x").values<float>()[2 * r + 1], -static_cast<float>(i));
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(batch.at("ids").values<std::int32_t>()[3 * r + k], 10 * i + k) << "row " << r;
    EXPECT_EQ(batch.at("flag").values<bool>()[r], i % 2 == 1) << "row " << r;
    EXPECT_EQ(batch.at("byte").values<std::uint8_t>()[r], i) << "row " << r;
    EXPECT_EQ(batch.at("label").values<std::int64_t>()[r], i % 3) << "row " << r;
    samples.push_back(i);
  }
  return samples;
}

TEST(Dataset, HoldsNamedFeedsOfEveryDtypeInTheirOrder) {
  const dataset data = mixed(5);
  EXPECT_EQ(data.size(), 5);
  std::vector<std::string> names;
  for (const auto& f : data.feeds()) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "ids", "flag", "byte", "label"}));
  EXPECT_EQ(data.at("ids").type(), dtype::int32);
  EXPECT_EQ(data.at("flag").type(), dtype::boolean);
  EXPECT_EQ(data.width("ids"), 3);
  EXPECT_EQ(data.find("absent"), nullptr);
  expect_error([&] { data.at("absent"); }, {"no feed 'absent'", "'x', 'ids', 'flag', 'byte', 'label'"});
  EXPECT_EQ(samples_of(data.slice(1, 4)), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(dataset().size(), 0);
}

TEST(Dataset, RefusesFeedsThatDisagreeNamingBoth) {
  const auto rows = [](std::int64_t n) { return tensor::zeros(dtype::fp32, {n, 2}); };
  expect_error([&] { dataset({{"a", rows(4)}, {"b", rows(4)}, {"c", rows(3)}}); },
               {"feed 'a' has 4 rows but feed 'c' has 3"});
  expect_error(
      [&] { dataset({{"a", rows(4)}, {"b", rows(5)}}, [](const std::string& n) { return "/d/" + n + ".npy"; }); },
      {"/d/a.npy has 4 rows but /d/b.npy has 5"});
  expect_error([&] { dataset({{"a", rows(4)}, {"a", rows(4)}}); }, {"feed 'a' is given twice"});
  expect_error([&] { dataset({{"s", tensor::from_vector(std::vector<float>{1.f}, {})}}); },
               {"feed 's' is a scalar"});
  expect_error([&] { dataset({{"e", tensor()}}); }, {"feed 'e' has no data"});
}

TEST(Batcher, SlicesEveryFeedWithTheSamePermutation) {
  const dataset data = mixed(11);
  batcher batches(data, 4, 5);
  std::vector<std::int64_t> epoch;
  for (int b = 0; b < 3; ++b) {
    const auto served = samples_of(batches.next());
    epoch.insert(epoch.end(), served.begin(), served.end());
  }
  std::vector<std::int64_t> sorted = epoch;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> all(11);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all) << "every sample once";
  EXPECT_NE(epoch, all) << "shuffled";
  // A process's share of a batch: the same rows of every feed, in the batch's order.
  batcher again(data, 4, 5);
  EXPECT_EQ(samples_of(again.next(1, 2)), std::vector<std::int64_t>(epoch.begin() + 1, epoch.begin() + 3));
}

TEST(Batcher, ATakenBatchCopiedInPiecesInAnyOrderIsWhatNextServes) {
  // 300 rows of 2 KiB and 2 feeds: several pieces of ~64 KiB each.
  std::vector<float> images;
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < 300; ++i) {
    for (int c = 0; c < 512; ++c) images.push_back(static_cast<float>(i * 1000 + c));
    labels.push_back(i);
  }
  const dataset data({{"image", tensor::from_vector(images, {300, 512})},
                      {"label", tensor::from_vector(labels, {300, 1})}});
  batcher served(data, 200, 9), taken(data, 200, 9);
  for (int b = 0; b < 3; ++b) { // across an epoch's end: the partial batch, then a reshuffle
    const std::int64_t rows = served.next_rows();
    ASSERT_EQ(taken.next_rows(), rows);
    const dataset expected = served.next(10, rows - 30);
    batch_copy copy = taken.take(10, rows - 30);
    ASSERT_GE(copy.pieces(), 2) << "batch " << b;
    ASSERT_LE(copy.pieces(), rows - 30);
    for (int k = copy.pieces() - 1; k >= 0; --k) copy.copy(k);
    for (const char* feed : {"image", "label"}) {
      const tensor& want = expected.at(feed);
      const tensor& got = copy.rows().at(feed);
      ASSERT_EQ(got.shape(), want.shape()) << feed;
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.bytes()), 0) << feed << ", batch " << b;
    }
    EXPECT_EQ(taken.served(), served.served());
  }
  batch_copy small = taken.take(0, 1); // one row: one piece, however many bytes
  EXPECT_EQ(small.pieces(), 1);
  expect_error([&] { small.copy(1); }, {"piece 1 of 1"});
  expect_error([&] { taken.take(0, 500); }, {"rows [0, 500) of a batch of"});
}

TEST(NpyDir, NamesThatAreNotFileNameSafeArePercentEncoded) {
  EXPECT_EQ(npy_file_name("input_ids"), "input_ids.npy");
  EXPECT_EQ(npy_file_name("fc_0.tmp_1@GRAD-x"), "fc_0.tmp_1@GRAD-x.npy");
  EXPECT_EQ(npy_file_name("enc/input ids"), "enc%2Finput%20ids.npy");
  EXPECT_EQ(npy_file_name("50%"), "50%25.npy");
  EXPECT_EQ(npy_file_name("../up"), "..%2Fup.npy");
  EXPECT_EQ(npy_file_name("\xc3\xa9"), "%C3%A9.npy");
  EXPECT_EQ(npy_feed_file("d", "a/b", true), "d/test/a%2Fb.npy");
}

TEST(NpyDir, ReadsEveryFeedByItsNameAndNamesBothFilesThatDisagree) {
  temp_dir dir("npy_dir_feeds");
  const dataset data = mixed(6);
  for (const auto& f : data.feeds()) write_npy(dir.file(f.name + ".npy"), f.rows);
  const auto loaded = load_npy_dir(dir.path().string(), {"label", "ids", "flag", "byte", "x"});
  EXPECT_FALSE(loaded.test.has_value());
  std::vector<std::string> names;
  for (const auto& f : loaded.train.feeds()) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"label", "ids", "flag", "byte", "x"}));
  EXPECT_EQ(samples_of(loaded.train), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));

  write_npy(dir.file("byte.npy"), data.slice(0, 5).at("byte"));
  expect_error([&] { load_npy_dir(dir.path().string(), {"x", "byte"}); },
               {dir.file("x.npy") + " has 6 rows but " + dir.file("byte.npy") + " has 5"});
  expect_error([&] { load_npy_dir(dir.path().string(), {"x", "a/b"}); },
               {"missing " + dir.file("a%2Fb.npy") + " for feed 'a/b'"});
  std::filesystem::create_directories(dir.path() / "test");
  write_npy((dir.path() / "test" / "x.npy").string(), data.at("x"));
  expect_error([&] { load_npy_dir(dir.path().string(), {"x", "ids"}); },
               {"missing " + (dir.path() / "test" / "ids.npy").string() + " for feed 'ids'"});
  write_npy((dir.path() / "test" / "ids.npy").string(), data.slice(0, 2).at("ids"));
  const auto split = load_npy_dir(dir.path().string(), {"x"});
  ASSERT_TRUE(split.test.has_value());
  EXPECT_EQ(split.test->size(), 6);
}

} // namespace
} // namespace pe

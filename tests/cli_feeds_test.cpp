// pe-actor-run --data npy:DIR feeds every feed of a program by its name (issue 26, "feeds by
// name"): feeds of every dtype the engine runs train, each row-aligned with the others, on 1
// and 2 places; files that disagree, are missing or have another dtype are refused naming
// them; --eval reads the same feeds from DIR/test/; a name that is not file-name-safe is
// percent-encoded; a resumed run continues the losses; the pixel formats refuse programs
// whose feeds are not one FP32 image and one INT64 label; and a bag-of-words classifier
// saved by paddlepaddle 2.6.2 (input_ids INT64 [-1, 8] -> Embedding -> mean -> Linear ->
// cross entropy, SGD; tests/data/paddle_bow_classifier, scripts/make_paddle_fixture.py)
// gives Paddle's 20 losses within 1e-4 on 1 and 2 places.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
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
#include "tests/support/job.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

namespace fs = std::filesystem;
using testing::losses;
using testing::run_result;
using testing::slurp;
using testing::temp_dir;

constexpr std::int64_t rows = 40, test_rows = 12;

run_result run(const std::string& args, const temp_dir& dir) {
  return testing::run_binary(testing::pe_actor_run_binary(), args, dir.path());
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A failed run: exit status 2, one error line holding every part.
void expect_refused(const run_result& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_TRUE(r.err.starts_with("pe-actor-run: error: ")) << r.err;
  for (const auto& part : parts)
    EXPECT_TRUE(contains(r.err, part)) << "'" << r.err << "' lacks '" << part << "'";
}

/// DIR/main.pb and DIR/startup.pb of a classifier fed five feeds, one of each dtype the
/// engine runs: `ids` INT32 [-1, 3] -> lookup_table_v2 -> reduce_mean over the words, plus
/// x FP32 [-1, 4], times flag BOOL [-1, 4] cast to FP32, plus byte UINT8 [-1, 4] cast to
/// FP32, -> fc(3) -> softmax_with_cross_entropy against label INT64 [-1, 1] -> mean, SGD.
void write_mixed_program(const fs::path& dir, const std::string& ids = "ids") {
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  b.data(ids, {-1, 3}, dtype::int32);
  b.data("x", {-1, 4}, dtype::fp32);
  b.data("flag", {-1, 4}, dtype::boolean);
  b.data("byte", {-1, 4}, dtype::uint8);
  b.data("label", {-1, 1}, dtype::int64);
  const auto table = b.parameter("embedding_0.w_0", {10, 4}, program_builder::init::xavier_uniform);
  b.append_op("lookup_table_v2", {{"W", {table}}, {"Ids", {ids}}}, {{"Out", {"words"}}},
              {{"padding_idx", std::int64_t{-1}}, {"is_sparse", false}});
  b.append_op("reduce_mean", {{"X", {"words"}}}, {{"Out", {"bag"}}},
              {{"dim", std::vector<std::int32_t>{1}}, {"keep_dim", false}, {"reduce_all", false}});
  b.append_op("cast", {{"X", {"flag"}}}, {{"Out", {"flag_f"}}},
              {{"in_dtype", std::int32_t{0}}, {"out_dtype", std::int32_t{5}}});
  b.append_op("cast", {{"X", {"byte"}}}, {{"Out", {"byte_f"}}},
              {{"in_dtype", std::int32_t{20}}, {"out_dtype", std::int32_t{5}}});
  b.append_op("elementwise_add", {{"X", {"x"}}, {"Y", {"bag"}}}, {{"Out", {"h0"}}}, {{"axis", std::int32_t{-1}}});
  b.append_op("elementwise_mul", {{"X", {"h0"}}, {"Y", {"flag_f"}}}, {{"Out", {"h1"}}}, {{"axis", std::int32_t{-1}}});
  b.append_op("elementwise_add", {{"X", {"h1"}}, {"Y", {"byte_f"}}}, {{"Out", {"h2"}}}, {{"axis", std::int32_t{-1}}});
  auto [softmax, loss] = b.softmax_with_cross_entropy(b.fc("h2", 3, ""), "label");
  const auto mean_loss = b.mean(loss);
  optimizer_config sgd;
  sgd.learning_rate = 0.1f;
  append_optimizer(b, sgd, append_backward(main, mean_loss));
  fs::create_directories(dir);
  save_program(main, (dir / "main.pb").string(), program_format::binary);
  save_program(startup, (dir / "startup.pb").string(), program_format::binary);
}

/// The five feeds of write_mixed_program for `n` samples, different per `salt`, each a
/// function of the sample so that every feed changes the loss.
struct mixed_feeds {
  tensor ids, x, flag, byte, label;

  mixed_feeds(std::int64_t n, unsigned salt) {
    std::vector<std::int32_t> id_values;
    std::vector<float> x_values;
    std::vector<std::uint8_t> byte_values;
    std::vector<std::int64_t> labels;
    flag = tensor(dtype::boolean, {n, 4});
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t s = i + salt;
      for (int k = 0; k < 3; ++k) id_values.push_back(static_cast<std::int32_t>((s * 3 + k * 7) % 10));
      for (int k = 0; k < 4; ++k) {
        x_values.push_back(static_cast<float>((s * 5 + k * 3) % 11) / 11.f - 0.5f);
        flag.values<bool>()[i * 4 + k] = (s + k) % 3 != 0;
        byte_values.push_back(static_cast<std::uint8_t>((s * 7 + k) % 4));
      }
      labels.push_back((s * s + s / 3) % 3);
    }
    ids = tensor::from_vector(id_values, {n, 3});
    x = tensor::from_vector(x_values, {n, 4});
    byte = tensor::from_vector(byte_values, {n, 4});
    label = tensor::from_vector(labels, {n, 1});
  }

  /// Writes DIR/<feed>.npy for each, `ids` under the file name `ids_file`.
  void write(const fs::path& dir, const std::string& ids_file = "ids.npy") const {
    fs::create_directories(dir);
    write_npy((dir / ids_file).string(), ids);
    write_npy((dir / "x.npy").string(), x);
    write_npy((dir / "flag.npy").string(), flag);
    write_npy((dir / "byte.npy").string(), byte);
    write_npy((dir / "label.npy").string(), label);
  }
};

/// `t` with its rows in reverse order.
tensor reversed(const tensor& t) {
  tensor out(t.type(), t.shape());
  const auto row = t.bytes() / static_cast<std::size_t>(t.dim(0));
  for (std::int64_t i = 0; i < t.dim(0); ++i)
    std::copy_n(static_cast<const std::byte*>(t.raw()) + i * row, row,
                static_cast<std::byte*>(out.raw()) + (t.dim(0) - 1 - i) * row);
  return out;
}

/// The --model and --startup flags of the program in DIR.
std::string program_flags(const temp_dir& dir, const std::string& program) {
  return " --model " + dir.file(program + "/main.pb") + " --startup " +
         dir.file(program + "/startup.pb");
}

/// Every batch is the whole data set, in file order.
const std::string whole_batches = " --no-shuffle --batch-size 40 --steps 4 --metrics ";

TEST(CliFeeds, FeedsOfEveryDtypeTrainRowAlignedByName) {
  temp_dir dir("cli_feeds_dtypes");
  write_mixed_program(dir.path() / "program");
  const mixed_feeds feeds(rows, 0);
  feeds.write(dir.path() / "data");
  const auto train = [&](const std::string& data, const std::string& places, const std::string& name) {
    auto r = run(program_flags(dir, "program") + " --data npy:" + dir.file(data) + " --places " + places +
                 whole_batches + dir.file(name + ".json"), dir);
    EXPECT_EQ(r.status, 0) << r.err;
    return losses(dir.file(name + ".json"));
  };
  const auto one = train("data", "cpu:1", "one");
  ASSERT_EQ(one.size(), 4u);
  EXPECT_LT(one.back(), one.front()) << "it learns";
  // Two places split every feed's rows alike: the same losses as one place.
  const auto two = train("data", "cpu:2", "two");
  ASSERT_EQ(two.size(), 4u);
  for (std::size_t s = 0; s < one.size(); ++s) EXPECT_NEAR(two[s], one[s], 1e-5 * std::abs(one[s])) << s;

  // Every file's rows reversed together: the same samples, so the same mean loss...
  mixed_feeds all_reversed = feeds;
  for (tensor* t : {&all_reversed.ids, &all_reversed.x, &all_reversed.flag, &all_reversed.byte, &all_reversed.label})
    *t = reversed(*t);
  all_reversed.write(dir.path() / "reversed");
  const auto same = train("reversed", "cpu:1", "reversed");
  ASSERT_EQ(same.size(), 4u);
  EXPECT_NEAR(same[0], one[0], 1e-5 * std::abs(one[0]));
  // ...while reversing one feed alone pairs its rows with other samples: each feed reaches
  // the program, row by row.
  for (const std::string feed : {"ids", "x", "flag", "byte", "label"}) {
    fs::create_directories(dir.path() / feed);
    feeds.write(dir.path() / feed);
    const tensor& original = feed == "ids" ? feeds.ids : feed == "x" ? feeds.x : feed == "flag" ? feeds.flag
                           : feed == "byte" ? feeds.byte : feeds.label;
    write_npy((dir.path() / feed / (feed + ".npy")).string(), reversed(original));
    const auto moved = train(feed, "cpu:1", feed);
    ASSERT_EQ(moved.size(), 4u) << feed;
    EXPECT_GT(std::abs(moved[0] - one[0]), 1e-4 * std::abs(one[0])) << feed << " does not reach the program";
  }
}

TEST(CliFeeds, FilesThatDoNotFitTheFeedsAreRefusedNamingThem) {
  temp_dir dir("cli_feeds_errors");
  write_mixed_program(dir.path() / "program");
  const auto data = dir.path() / "data";
  const mixed_feeds feeds(rows, 0);
  const auto train = [&] {
    return run(program_flags(dir, "program") + " --steps 1 --data npy:" + data.string(), dir);
  };
  const auto file = [&](const std::string& feed) { return (data / (feed + ".npy")).string(); };

  feeds.write(data);
  write_npy(file("byte"), tensor::zeros(dtype::uint8, {rows - 1, 4}));
  expect_refused(train(), {" has 40 rows but " + file("byte") + " has 39"});
  const run_result rows_refused = train();
  EXPECT_TRUE(contains(rows_refused.err, file("ids") + " has 40 rows")) << rows_refused.err;

  feeds.write(data);
  fs::remove(file("flag"));
  expect_refused(train(), {"missing " + file("flag") + " for feed 'flag'"});

  feeds.write(data);
  write_npy(file("ids"), tensor::zeros(dtype::int64, {rows, 3}));
  expect_refused(train(), {file("ids") + ": feed 'ids' is INT64, the program declares INT32"});

  feeds.write(data);
  write_npy(file("x"), tensor::zeros(dtype::fp64, {rows, 4}));
  expect_refused(train(), {file("x") + ": feed 'x' is FP64, the program declares FP32"});

  feeds.write(data);
  write_npy(file("flag"), tensor::zeros(dtype::boolean, {rows, 3}));
  expect_refused(train(), {file("flag") + ": feed 'flag' has rows of shape [3] (width 3), the program "
                           "declares [-1, 4] (width 4)"});

  // The pixel formats feed one FP32 image and one INT64 label, nothing else.
  expect_refused(run(program_flags(dir, "program") + " --steps 1 --data synthetic", dir),
                 {"synthetic feeds image (FP32), label (INT64), each to the program's one feed of its "
                  "dtype; the program's feeds are ids (INT32), flag (BOOL), byte (UINT8), x (FP32), "
                  "label (INT64) (--data npy:DIR feeds any feeds by their names)"});
  const std::string bow = std::string(PE_TEST_DATA_DIR) + "/paddle_bow_classifier/";
  expect_refused(run("--model " + bow + "main.pb --startup " + bow + "startup.pb --steps 1 --data synthetic", dir),
                 {"the program's feeds are input_ids (INT64), label (INT64)"});
}

TEST(CliFeeds, EvalReadsEveryFeedFromTheTestFolder) {
  temp_dir dir("cli_feeds_eval");
  write_mixed_program(dir.path() / "program");
  const auto data = dir.path() / "data";
  mixed_feeds(rows, 0).write(data);
  const auto eval = [&](const std::string& name) {
    auto r = run(program_flags(dir, "program") + " --data npy:" + data.string() +
                 " --eval --batch-size 8 --steps 5 --metrics " + dir.file(name), dir);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(slurp(dir.file(name))).at("eval");
  };
  const auto refused = [&] {
    return run(program_flags(dir, "program") + " --data npy:" + data.string() + " --eval --steps 1", dir);
  };
  expect_refused(refused(), {"has no test set", "a test/ directory with a file per feed"});

  const mixed_feeds test(test_rows, 5);
  test.write(data / "test");
  const auto first = eval("first.json");
  EXPECT_EQ(first.at("samples"), test_rows);
  const double accuracy = first.at("accuracy").get<double>();
  EXPECT_GE(accuracy, 0.0);
  EXPECT_LE(accuracy, 1.0);
  // The test set's own rows are evaluated: another flag file, another loss.
  write_npy((data / "test" / "flag.npy").string(), reversed(test.flag));
  EXPECT_NE(eval("flag.json").at("loss"), first.at("loss"));

  const auto test_file = [&](const std::string& feed) { return (data / "test" / (feed + ".npy")).string(); };
  write_npy(test_file("label"), tensor::zeros(dtype::int64, {test_rows - 1, 1}));
  expect_refused(refused(), {test_file("label") + " has 11"});
  fs::remove(test_file("label"));
  expect_refused(refused(), {"missing " + test_file("label") + " for feed 'label'"});
}

TEST(CliFeeds, NamesThatAreNotFileNameSafeArePercentEncoded) {
  temp_dir dir("cli_feeds_names");
  write_mixed_program(dir.path() / "plain");
  write_mixed_program(dir.path() / "odd", "encoder/input ids");
  const mixed_feeds feeds(rows, 0);
  feeds.write(dir.path() / "plain_data");
  feeds.write(dir.path() / "odd_data", "encoder%2Finput%20ids.npy");
  const auto train = [&](const std::string& name) {
    return run(program_flags(dir, name) + " --data npy:" + dir.file(name + "_data") + whole_batches +
               dir.file(name + ".json"), dir);
  };
  const auto plain = train("plain");
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto odd = train("odd");
  ASSERT_EQ(odd.status, 0) << odd.err;
  ASSERT_EQ(losses(dir.file("plain.json")).size(), 4u);
  EXPECT_EQ(losses(dir.file("odd.json")), losses(dir.file("plain.json")));

  const auto file = (dir.path() / "odd_data" / "encoder%2Finput%20ids.npy").string();
  fs::remove(file);
  expect_refused(train("odd"), {"missing " + file + " for feed 'encoder/input ids'"});
  // The unencoded path (a subdirectory) is not read.
  fs::create_directories(dir.path() / "odd_data" / "encoder");
  write_npy((dir.path() / "odd_data" / "encoder" / "input ids.npy").string(), feeds.ids);
  expect_refused(train("odd"), {"missing " + file});
}

TEST(CliFeeds, AResumedRunContinuesTheLossesOfNamedFeeds) {
  temp_dir dir("cli_feeds_resume");
  write_mixed_program(dir.path() / "program");
  mixed_feeds(rows, 0).write(dir.path() / "data");
  const std::string setup =
      program_flags(dir, "program") + " --data npy:" + dir.file("data") + " --batch-size 16 --places cpu:2";
  const auto whole = run(setup + " --steps 6 --metrics " + dir.file("whole.json"), dir);
  ASSERT_EQ(whole.status, 0) << whole.err;
  const auto first = run(setup + " --steps 3 --save-params " + dir.file("ckpt") + " --metrics " +
                         dir.file("first.json"), dir);
  ASSERT_EQ(first.status, 0) << first.err;
  const auto resumed = run(setup + " --steps 6 --load-params " + dir.file("ckpt") + " --metrics " +
                           dir.file("resumed.json"), dir);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const auto all = losses(dir.file("whole.json")), tail = losses(dir.file("resumed.json"));
  ASSERT_EQ(all.size(), 6u);
  ASSERT_EQ(tail.size(), 3u);
  EXPECT_EQ(losses(dir.file("first.json")), std::vector<double>(all.begin(), all.begin() + 3));
  EXPECT_EQ(tail, std::vector<double>(all.begin() + 3, all.end()));
}

/// pe-actor-run's 20 losses on the Paddle bag-of-words fixture, its batch fed by name.
std::vector<double> bow_losses(const std::string& places) {
  const std::string fixture = std::string(PE_TEST_DATA_DIR) + "/paddle_bow_classifier";
  temp_dir out("cli_feeds_bow");
  const auto r = run("--model " + fixture + "/main.pb --startup " + fixture + "/startup.pb --load-params " +
                     fixture + "/params --data npy:" + fixture + " --no-shuffle --batch-size 8 --steps 20 "
                     "--places " + places + " --metrics " + out.file("m.json"), out);
  EXPECT_EQ(r.status, 0) << r.err;
  return losses(out.file("m.json"));
}

TEST(CliFeeds, PaddlesBagOfWordsClassifierTrainsAsInPaddle) {
  const std::string fixture = std::string(PE_TEST_DATA_DIR) + "/paddle_bow_classifier";
  for (const std::string places : {"1", "2"}) {
    const tensor expected = read_npy(fixture + "/losses_" + places + "p.npy");
    ASSERT_EQ(expected.numel(), 20);
    const auto paddle = expected.values<float>();
    const auto ours = bow_losses("cpu:" + places);
    ASSERT_EQ(ours.size(), 20u) << places << " place(s)";
    for (std::size_t s = 0; s < ours.size(); ++s)
      EXPECT_NEAR(ours[s], paddle[s], 1e-4 * std::abs(paddle[s])) << places << " place(s), step " << s + 1;
  }
}

} // namespace
} // namespace pe
